"""``save`` and ``load``: checkpoints in torch's own file format, read and written without torch.

The file is the zip archive ``torch.save`` writes (uncompressed records under one folder)::

    archive/data.pkl        the object, pickled (protocol 2); each tensor is a call
                            torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)
                            whose storage is a reference ("storage", torch.FloatStorage, "0", "cpu", numel)
    archive/data/0, 1, ...  each storage's bytes, little-endian, aligned to 64 bytes in the file
    archive/byteorder       "little"
    archive/version         "3"

so ``torch.load(path, weights_only=True)`` reads what ``save`` wrote, and ``load`` reads what
``torch.save`` wrote. Tensors that share memory share one storage, in the file and after loading.

Loading never runs code from the file: the unpickler admits only the handful of globals this
format needs (the rebuild functions, the storage types, ``collections.OrderedDict`` and ``Counter``) and refuses a
file naming any other, before calling anything, as torch's ``weights_only=True`` does.
Saving writes a temporary file beside the target and renames it into place, so an interrupted
save leaves the previous checkpoint as it was.
"""

from __future__ import annotations

import codecs
import io
import os
import pickle
import struct
import tempfile
import zipfile
from collections import Counter, OrderedDict
from typing import IO, Any

import numpy as np

from .autograd.devices import check_device
from .autograd.tensor import Tensor

_STORAGE_TYPES: dict[np.dtype, str] = {
    np.dtype(np.float16): "HalfStorage",
    np.dtype(np.float32): "FloatStorage",
    np.dtype(np.float64): "DoubleStorage",
    np.dtype(np.int8): "CharStorage",
    np.dtype(np.uint8): "ByteStorage",
    np.dtype(np.int16): "ShortStorage",
    np.dtype(np.int32): "IntStorage",
    np.dtype(np.int64): "LongStorage",
    np.dtype(np.bool_): "BoolStorage",
}
_DTYPE_OF_STORAGE: dict[str, np.dtype] = {name: dtype for dtype, name in _STORAGE_TYPES.items()}
_ALIGNMENT = 64  # torch aligns each storage's bytes to 64 in the file (what its memory-mapped loading needs)


class UnsafeCheckpointError(pickle.UnpicklingError, RuntimeError):
    """A checkpoint names a global that weights-only loading does not admit (it is never called)."""


class _NotWeights(Exception):
    """Raised by the weights writer at the first object that is not tensors, numbers, strings or containers."""


class _ObjectPickler(pickle.Pickler):
    """Pickles a whole object (a model, an optimizer, a Namespace) with its arrays stored as the archive's records."""

    def __init__(self, out: IO[bytes], storages: dict[int, tuple[str, np.ndarray]]) -> None:
        super().__init__(out, protocol=2)
        self.storages = storages

    def persistent_id(self, obj: Any) -> Any:
        """An array goes to a record of its own: ``("ndarray", key, dtype, shape)``."""
        if type(obj) is not np.ndarray or obj.dtype not in _STORAGE_TYPES:
            return None
        key, _ = self.storages.setdefault(id(obj), (str(len(self.storages)), np.ascontiguousarray(obj)))
        return ("ndarray", key, obj.dtype.str, tuple(obj.shape))


# -- saving --------------------------------------------------------------------------------------------


class _Writer:
    """Writes protocol-2 pickle opcodes for the values a checkpoint may hold, and collects the storages.

    Written by hand rather than with ``pickle.Pickler`` because the globals it names (torch's
    rebuild functions) must be written without importing torch.
    """

    def __init__(self) -> None:
        self.out = io.BytesIO()
        self.storages: dict[int, tuple[str, np.ndarray]] = {}  # id(root array) -> (key, the root array)

    def dump(self, obj: Any) -> bytes:
        self.out.write(b"\x80\x02")  # PROTO 2
        self.value(obj)
        self.out.write(b".")  # STOP
        return self.out.getvalue()

    def op(self, code: bytes, *packed: bytes) -> None:
        self.out.write(code + b"".join(packed))

    def value(self, obj: Any) -> None:
        """One value, by its type: containers recurse, tensors become rebuild calls."""
        from .nn.parameter import Parameter

        if obj is None:
            self.op(b"N")
        elif isinstance(obj, (bool, np.bool_)):
            self.op(b"\x88" if obj else b"\x89")  # NEWTRUE, NEWFALSE
        elif isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
            self.integer(int(obj))
        elif isinstance(obj, (float, np.floating)):
            self.op(b"G", struct.pack(">d", float(obj)))  # BINFLOAT
        elif isinstance(obj, str):
            data = obj.encode("utf-8")
            self.op(b"X", struct.pack("<I", len(data)), data)  # BINUNICODE
        elif isinstance(obj, (bytes, bytearray)):  # protocol 2's bytes: _codecs.encode(text, "latin1")
            self.call("_codecs", "encode", bytes(obj).decode("latin1"), "latin1")
        elif isinstance(obj, (set, frozenset)):
            self.call("builtins", "set", sorted(obj, key=repr))
        elif isinstance(obj, complex):
            self.call("builtins", "complex", obj.real, obj.imag)
        elif isinstance(obj, tuple):
            self.op(b"(")  # MARK
            for item in obj:
                self.value(item)
            self.op(b"t")  # TUPLE
        elif isinstance(obj, list):
            self.op(b"]")  # EMPTY_LIST
            if obj:
                self.op(b"(")
                for item in obj:
                    self.value(item)
                self.op(b"e")  # APPENDS
        elif isinstance(obj, Counter):  # MultiStepLR's milestones: Counter({...})
            self.call("collections", "Counter", dict(obj))
        elif isinstance(obj, dict):
            if isinstance(obj, OrderedDict):
                self.global_("collections", "OrderedDict")
                self.op(b")R")  # EMPTY_TUPLE, REDUCE: OrderedDict()
            else:
                self.op(b"}")  # EMPTY_DICT
            if obj:
                self.op(b"(")
                for key, item in obj.items():
                    self.value(key)
                    self.value(item)
                self.op(b"u")  # SETITEMS
        elif isinstance(obj, Parameter):
            self.global_("torch._utils", "_rebuild_parameter")
            self.op(b"(")
            self.tensor(obj.array, False)
            self.value(obj.requires_grad)
            self.empty_ordered_dict()
            self.op(b"tR")
        elif isinstance(obj, Tensor):
            self.tensor(obj.array, obj.requires_grad)
        elif isinstance(obj, np.ndarray):  # torch's weights-only loading admits no NumPy globals: a tensor
            self.tensor(obj, False)
        else:  # a model, an argparse Namespace, any other object: the whole object is pickled (see save)
            raise _NotWeights(type(obj).__name__)

    def integer(self, n: int) -> None:
        if 0 <= n < 256:
            self.op(b"K", bytes([n]))  # BININT1
        elif -(2**31) <= n < 2**31:
            self.op(b"J", struct.pack("<i", n))  # BININT
        else:
            data = n.to_bytes((n.bit_length() + 8) // 8, "little", signed=True)
            self.op(b"\x8a", bytes([len(data)]), data)  # LONG1

    def call(self, module: str, name: str, *args: Any) -> None:
        """``module.name(*args)``: GLOBAL, the arguments as a tuple, REDUCE."""
        self.global_(module, name)
        self.op(b"(")
        for arg in args:
            self.value(arg)
        self.op(b"tR")

    def global_(self, module: str, name: str) -> None:
        self.op(b"c", f"{module}\n{name}\n".encode())  # GLOBAL

    def empty_ordered_dict(self) -> None:
        self.global_("collections", "OrderedDict")
        self.op(b")R")

    def tensor(self, array: np.ndarray, requires_grad: bool) -> None:
        """``_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict())``."""
        if array.dtype not in _STORAGE_TYPES:
            raise TypeError(f"save: cannot save an array of dtype {array.dtype} (torch's format has no such storage)")
        key, root, offset, strides = self.storage_of(array)
        self.global_("torch._utils", "_rebuild_tensor_v2")
        self.op(b"(")
        self.op(b"(")  # the persistent id: ("storage", torch.FloatStorage, key, "cpu", numel)
        self.value("storage")
        self.global_("torch", _STORAGE_TYPES[root.dtype])
        self.value(key)
        self.value("cpu")
        self.value(root.size)
        self.op(b"tQ")  # TUPLE, BINPERSID
        self.value(offset)
        self.value(tuple(array.shape))
        self.value(strides)
        self.value(bool(requires_grad))
        self.empty_ordered_dict()
        self.op(b"tR")

    def storage_of(self, array: np.ndarray) -> tuple[str, np.ndarray, int, tuple[int, ...]]:
        """``(key, storage, offset, strides)``: a view shares its root array's storage; anything else gets its own."""
        root = array
        while isinstance(root.base, np.ndarray):
            root = root.base
        itemsize = array.dtype.itemsize
        start = array.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        shares = (root.dtype == array.dtype and root.flags.c_contiguous and array.size > 0
                  and start % itemsize == 0 and all(s >= 0 and s % itemsize == 0 for s in array.strides))
        if shares:
            strides = tuple(s // itemsize for s in array.strides)
        else:  # a transposed root, a dtype view, negative strides or an empty array: a contiguous copy of its own
            root, start = np.ascontiguousarray(array).copy(), 0
            strides = tuple(int(np.prod(array.shape[i + 1:])) for i in range(array.ndim))
        key, root = self.storages.setdefault(id(root), (str(len(self.storages)), root))
        return key, root, start // itemsize, strides


def _aligned_record(archive: zipfile.ZipFile, name: str, data: bytes) -> None:
    """An uncompressed record whose data starts at a multiple of 64 bytes (padding in the header's extra field)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    assert archive.fp is not None  # open for writing
    header_end = archive.fp.tell() + 30 + len(name.encode()) + 4  # local header, name, the extra field's own header
    info.extra = b"FB" + struct.pack("<H", -header_end % _ALIGNMENT) + b"Z" * (-header_end % _ALIGNMENT)
    archive.writestr(info, data, compress_type=zipfile.ZIP_STORED)


def _write_archive(obj: Any, f: IO[bytes]) -> None:
    writer = _Writer()
    try:
        pickled = writer.dump(obj)  # tensors, numbers, strings and containers: a file torch reads
    except _NotWeights:  # anything else: the object pickled whole (loaded with weights_only=False, or its globals
        writer.storages = {}  # allowed by add_safe_globals), its arrays in the archive's records as before
        out = io.BytesIO()
        _ObjectPickler(out, writer.storages).dump(obj)
        pickled = out.getvalue()
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as archive:
        _aligned_record(archive, "archive/data.pkl", pickled)
        _aligned_record(archive, "archive/byteorder", b"little")
        for key, root in writer.storages.values():
            little_endian = root.astype(root.dtype.newbyteorder("<"), copy=False)
            _aligned_record(archive, f"archive/data/{key}", little_endian.tobytes())
        _aligned_record(archive, "archive/version", b"3\n")


def save(obj: Any, f: str | os.PathLike[str] | IO[bytes], pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False) -> None:
    """Write ``obj`` to ``f`` in torch's file format.

    A state dict (an optimizer's, a scheduler's, nested containers of tensors) is written in the form torch
    reads with ``weights_only=True``; any other object (a whole model, an argparse Namespace) is pickled
    whole, for ``load(weights_only=False)`` or ``add_safe_globals``, as torch.

    ``f`` is a path or a binary file object. To a path, the file is written whole under a
    temporary name in the same folder, then renamed over ``f``: a save that fails part-way leaves
    no partial file and the previous checkpoint intact. The file is always torch's zip format,
    pickle protocol 2, with the byte-order record; other choices of torch's arguments are refused.
    """
    if (pickle_module is not None or pickle_protocol != 2 or not _use_new_zipfile_serialization
            or _disable_byteorder_record):
        raise ValueError("save: only torch's default format is written (the zip archive, pickle protocol 2, "
                         "with its byte-order record)")
    if hasattr(f, "write"):
        _write_archive(obj, f)  # type: ignore[arg-type]
        return
    path = os.fspath(f)
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            _write_archive(obj, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


# -- loading -------------------------------------------------------------------------------------------


class _StorageType:
    """What ``torch.FloatStorage`` and its kin stand for in a file: a dtype."""

    def __init__(self, dtype: np.dtype) -> None:
        self.dtype = dtype


def _rebuild_tensor(storage: np.ndarray, offset: int, size: tuple[int, ...], stride: tuple[int, ...],
                    requires_grad: bool, hooks: Any, metadata: Any = None) -> Tensor:
    """A tensor viewing ``storage`` (shared with every other tensor of the same storage), bounds checked."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride) or offset < 0 or any(n < 0 for n in size) or any(s < 0 for s in stride):
        raise ValueError(f"load: a tensor with size {size}, stride {stride} and offset {offset} is malformed")
    last = offset + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else offset - 1
    if last >= storage.size:
        raise ValueError(f"load: a tensor with size {size}, stride {stride} and offset {offset} "
                         f"reaches past its storage of {storage.size} elements")
    itemsize = storage.dtype.itemsize
    view = np.lib.stride_tricks.as_strided(storage[offset:] if all(size) else storage[:0], shape=size,
                                           strides=tuple(s * itemsize for s in stride))
    tensor = Tensor._make(view)  # no copy: tensors of one storage stay views of it
    tensor.requires_grad = bool(requires_grad)
    return tensor


def _rebuild_parameter(data: Tensor, requires_grad: bool, hooks: Any, state: Any = None) -> Any:
    from .nn.parameter import Parameter

    parameter = Parameter(data.array, requires_grad=bool(requires_grad))
    parameter.array = data.array  # keep the storage shared, not copied
    return parameter


def _encode(text: str, encoding: str = "latin1") -> bytes:
    """How protocol 2 pickles ``bytes``: ``_codecs.encode(text, "latin1")``."""
    if encoding != "latin1":
        raise UnsafeCheckpointError(f"load: bytes encoded as {encoding!r} are not admitted (only 'latin1')")
    return codecs.encode(text, "latin1")


_ADMITTED: dict[tuple[str, str], Any] = {
    ("collections", "OrderedDict"): OrderedDict,
    ("collections", "Counter"): Counter,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("_codecs", "encode"): _encode,
    ("builtins", "set"): set,
    ("builtins", "complex"): complex,
    **{("torch", name): _StorageType(dtype) for name, dtype in _DTYPE_OF_STORAGE.items()},
}


# What add_safe_globals admits besides: (module, qualified name) -> the object
_SAFE_GLOBALS: dict[tuple[str, str], Any] = {}


def _key(obj: Any) -> tuple[str, str]:
    if isinstance(obj, tuple) and len(obj) == 2:  # torch's (object, "the name it was pickled under")
        name = obj[1]
        return name.rsplit(".", 1)[0], name.rsplit(".", 1)[1]
    return obj.__module__, obj.__qualname__


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Let weights-only loading name these classes and functions (as torch: only for code you trust)."""
    for obj in safe_globals:
        _SAFE_GLOBALS[_key(obj)] = obj[0] if isinstance(obj, tuple) else obj


def get_safe_globals() -> list[Any]:
    """The classes and functions ``add_safe_globals`` admitted."""
    return list(_SAFE_GLOBALS.values())


def clear_safe_globals() -> None:
    """Admit none again."""
    _SAFE_GLOBALS.clear()


class safe_globals:
    """``with safe_globals([Model]):``: ``add_safe_globals`` inside the block only."""

    def __init__(self, safe_globals: list[Any]) -> None:
        self.safe_globals = safe_globals

    def __enter__(self) -> None:
        self.before = dict(_SAFE_GLOBALS)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc: Any) -> None:
        _SAFE_GLOBALS.clear()
        _SAFE_GLOBALS.update(self.before)


def _tinyattn_globals() -> dict[tuple[str, str], Any]:
    """tinyattn's own tensors, as pickled inside a whole object: safe to rebuild, as torch's tensors are."""
    from .autograd import pickling
    from .nn.parameter import Parameter

    return {(c.__module__, c.__qualname__): c for c in (Tensor, Parameter, pickling.rebuild)}


class _Reader(pickle.Unpickler):
    """An unpickler that admits only ``_ADMITTED`` (and ``add_safe_globals``') and reads storages from the archive;
    with ``weights_only=False`` it admits any global, as torch's full unpickle does."""

    def __init__(self, data: bytes, archive: zipfile.ZipFile, prefix: str, source: str, mapped: bool,
                 weights_only: bool = True) -> None:
        super().__init__(io.BytesIO(data))
        self.archive, self.prefix, self.source, self.mapped = archive, prefix, source, mapped
        self.weights_only = weights_only
        self.loaded: dict[str, np.ndarray] = {}

    def find_class(self, module: str, name: str) -> Any:
        module = "builtins" if module == "__builtin__" else module  # protocol 2's name for it
        if not self.weights_only:
            return super().find_class(module, name)
        found = _ADMITTED.get((module, name)) or _SAFE_GLOBALS.get((module, name))
        found = found or _tinyattn_globals().get((module, name))
        if found is None:
            short = f"{module}.{name}"
            raise UnsafeCheckpointError(
                f"load: weights only load failed: {self.source} names the global {short}, which weights-only "
                f"loading does not admit; it was not called. If you trust the file's source, load it with "
                f"weights_only=False, or allow the global with tinyattn.serialization.add_safe_globals([{name}]) "
                f"(or the safe_globals([{name}]) context manager)")
        return found

    def persistent_load(self, pid: Any) -> np.ndarray:
        if isinstance(pid, tuple) and len(pid) == 4 and pid[0] == "ndarray":  # an array inside a whole object
            _, key, dtype, shape = pid
            if np.dtype(dtype) not in _STORAGE_TYPES:
                raise UnsafeCheckpointError(f"load: {self.source} holds an array of dtype {dtype}")
            raw = self.archive.read(f"{self.prefix}data/{key}")
            return np.frombuffer(bytearray(raw), dtype=np.dtype(dtype).newbyteorder("<")).astype(
                np.dtype(dtype), copy=False).reshape(shape)
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _StorageType)):
            raise UnsafeCheckpointError(f"load: {self.source} holds a reference {pid!r} that is not a storage")
        _, kind, key, location, numel = pid
        if not str(location).startswith("cpu") and not self.mapped:
            raise RuntimeError(f"load: {self.source} holds tensors saved on {location!r}, and tinyattn runs on the "
                               "CPU only; pass map_location='cpu' (as with torch on a machine without that device)")
        if key not in self.loaded:
            raw = self.archive.read(f"{self.prefix}data/{key}")
            if len(raw) != numel * kind.dtype.itemsize:
                raise ValueError(f"load: storage {key} of {self.source} holds {len(raw)} bytes, "
                                 f"expected {numel} elements of {kind.dtype}")
            little = np.frombuffer(bytearray(raw), dtype=kind.dtype.newbyteorder("<"))  # writable: a bytearray
            self.loaded[key] = little.astype(kind.dtype, copy=False)
        return self.loaded[key]


def load(f: str | os.PathLike[str] | IO[bytes], map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Read a checkpoint written by ``save`` or by ``torch.save``; tensors come back as tinyattn Tensors.

    Weights-only loading is the default (torch's since 2.6): the file may name only tensors, containers and
    what ``add_safe_globals`` admitted. ``weights_only=False`` unpickles whole objects (a saved model), which
    can run any code in the file, as in torch: only for files you trust. A ``pickle_module`` is refused.
    ``map_location`` may name the CPU; a GPU is refused, as on a torch built without CUDA.
    ``mmap=True`` is accepted and reads the file whole (the values are the same).
    """
    if pickle_module is not None or pickle_load_args:
        raise TypeError("load: pickle_module and pickle arguments are not supported (weights-only loading reads "
                        f"the format itself); got {sorted(pickle_load_args) or ['pickle_module']}")
    if map_location is not None and not callable(map_location) and not isinstance(map_location, dict):
        check_device("load", map_location if isinstance(map_location, str) else str(map_location))  # (torch's too)
    source = repr(os.fspath(f)) if not hasattr(f, "read") else "the file"
    try:
        archive = zipfile.ZipFile(f if hasattr(f, "read") else os.fspath(f))
    except zipfile.BadZipFile:
        raise RuntimeError(f"load: {source} is not a checkpoint in torch's zip format "
                           "(files from torch < 1.6, or saved with _use_new_zipfile_serialization=False, "
                           "are not supported)") from None
    with archive:
        names = archive.namelist()
        pickles = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
        if not pickles:
            raise RuntimeError(f"load: {source} is a zip archive but holds no data.pkl record")
        prefix = pickles[0][: -len("data.pkl")]
        byteorder = archive.read(f"{prefix}byteorder").decode() if f"{prefix}byteorder" in names else "little"
        if byteorder != "little":
            raise RuntimeError(f"load: {source} was written {byteorder}-endian; only little-endian files are read")
        return _Reader(archive.read(pickles[0]), archive, prefix, source, map_location is not None,
                       weights_only is not False).load()


__all__ = ["UnsafeCheckpointError", "add_safe_globals", "clear_safe_globals", "get_safe_globals", "load",
           "safe_globals", "save"]
