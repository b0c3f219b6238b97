"""``torch.backends.mps``: Apple's Metal back end, which tinyattn does not have."""


def is_available() -> bool:
    """False: tinyattn computes on the CPU only."""
    return False


def is_built() -> bool:
    """False: there is no Metal back end here."""
    return False
