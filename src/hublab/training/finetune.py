"""Fine-tune the bundled MiniLM bi-encoder on graph-generated questions (``hublab train``, DVC stage ``train``).

Loss: sentence-transformers' ``MultipleNegativesRankingLoss`` (every other positive in the batch is a negative).
The loop is a plain PyTorch loop over the loss module (AdamW, linear warm-up and decay): the Trainer API would
need ``accelerate``, which the project does not install, and a fixed number of steps is all a CPU budget allows.
Batches never hold the same question or positive twice (an identical text elsewhere in the batch would be a false
negative). CUDA when present (``device: auto``), else CPU.

Measured before and after training, on the held-out papers' generated questions: the MNRL validation loss and
MRR@10 of each question's positive among all held-out positives. Everything is logged to one MLflow run, and the
model is logged as a ``sentence_transformers`` model and registered (``tracking/embedder_runs.py``).
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from hublab.config import ORKG_GRAPH
from hublab.errors import InputError
from hublab.graph.base import KnowledgeGraph
from hublab.training.pairs import TrainPair, cap, split_by_paper


@dataclass
class TrainConfig:
    """``params.yaml: train`` (docs/training.md)."""

    name: str = "hublab-minilm-orkg"
    base_model: str = "all-MiniLM-L6-v2"
    graphs: list[str] = field(default_factory=lambda: ["gv1", ORKG_GRAPH])
    seed: int = 0
    val_fraction: float = 0.15
    phrasings_per_path: int = 2
    triple_share: float = 0.25
    false_drop: float = 0.5
    max_train_pairs: int | None = 2048
    max_val_pairs: int | None = 400
    batch_size: int = 32
    max_steps: int = 64
    learning_rate: float = 2e-5
    warmup_ratio: float = 0.1
    max_seq_length: int = 128
    device: str = "auto"
    output_dir: str = "models/embedders"
    experiment: str = "hublab-train"
    register: bool = True

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> TrainConfig:
        data = dict(data or {})
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise InputError(f"unknown train keys {sorted(unknown)}; expected {sorted(known)}", field="train")
        cfg = cls(**data)
        if cfg.batch_size < 2:
            raise InputError("train.batch_size must be >= 2 (in-batch negatives)", field="train.batch_size")
        if cfg.max_steps < 1:
            raise InputError("train.max_steps must be >= 1", field="train.max_steps")
        return cfg


@dataclass
class TrainResult:
    model_dir: str
    identity: str
    device: str
    n_pairs_generated: int
    n_train_pairs: int
    n_val_pairs: int
    n_train_papers: int
    n_val_papers: int
    steps: int
    train_loss_first: float
    train_loss_last: float
    val_loss_before: float
    val_loss_after: float
    mrr10_before: float
    mrr10_after: float
    generate_s: float
    train_s: float
    eval_s: float
    wall_s: float
    run_id: str | None = None
    model_uri: str | None = None
    registered_model: str | None = None
    version: str | None = None
    train_losses: list[float] = field(default_factory=list, repr=False)

    def metrics(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items() if isinstance(v, int | float) and not isinstance(v, bool)}


def batches(pairs: list[TrainPair], batch_size: int, rng: random.Random) -> list[list[TrainPair]]:
    """Shuffled batches in which no question and no positive text occurs twice (no in-batch false negatives of
    the trivial kind); a pair that clashes waits for a later batch."""
    pending = list(pairs)
    rng.shuffle(pending)
    out: list[list[TrainPair]] = []
    while pending:
        batch: list[TrainPair] = []
        seen: set[str] = set()
        rest: list[TrainPair] = []
        for p in pending:
            if len(batch) < batch_size and p.question not in seen and p.positive not in seen:
                batch.append(p)
                seen.update((p.question, p.positive))
            else:
                rest.append(p)
        if len(batch) < 2:
            break
        out.append(batch)
        pending = rest
    return out


def _features(model: Any, texts: list[str], device: str) -> dict[str, Any]:
    from sentence_transformers.util import batch_to_device

    return batch_to_device(model.preprocess(texts), device)


def mnrl_loss(model: Any, loss: Any, batch: list[TrainPair], device: str) -> Any:
    feats = [_features(model, [p.question for p in batch], device),
             _features(model, [p.positive for p in batch], device)]
    return loss(feats, None)


def validation_loss(model: Any, loss: Any, pairs: list[TrainPair], batch_size: int, device: str, seed: int) -> float:
    import torch

    bs = batches(pairs, batch_size, random.Random(seed))
    if not bs:
        return float("nan")
    model.eval()
    with torch.no_grad():
        vals = [float(mnrl_loss(model, loss, b, device)) for b in bs]
    return sum(vals) / len(vals)


def mrr_at_k(model: Any, queries: list[TrainPair], pool: list[TrainPair], k: int = 10) -> float:
    """Mean reciprocal rank of the first relevant text in the top ``k`` of all distinct positives in ``pool``; a
    text is relevant to a question when it is a positive of that same question text anywhere in ``pool``."""
    import torch

    if not queries:
        return float("nan")
    cands = sorted({p.positive for p in pool} | {p.positive for p in queries})
    relevant: dict[str, set[int]] = {}
    idx = {t: i for i, t in enumerate(cands)}
    for p in [*pool, *queries]:
        relevant.setdefault(p.question, set()).add(idx[p.positive])
    qs = sorted({p.question for p in queries})
    model.eval()
    with torch.no_grad():
        kw = {"batch_size": 64, "convert_to_tensor": True, "normalize_embeddings": True, "show_progress_bar": False}
        c = model.encode(cands, **kw)
        q = model.encode(qs, **kw)
        top = torch.topk(q @ c.T, k=min(k, len(cands)), dim=1).indices.tolist()
    total = 0.0
    for question, ranked in zip(qs, top, strict=True):
        for rank, j in enumerate(ranked, 1):
            if j in relevant[question]:
                total += 1.0 / rank
                break
    return total / len(qs)


def finetune(model: Any, train: list[TrainPair], cfg: TrainConfig, device: str, *, progress: bool = False,
             ) -> list[float]:
    """``cfg.max_steps`` optimiser steps of MNRL over ``train`` (epochs repeat as needed); returns the losses."""
    import torch
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    torch.manual_seed(cfg.seed)
    loss = MultipleNegativesRankingLoss(model)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate)
    warm = max(1, int(cfg.max_steps * cfg.warmup_ratio))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (cfg.max_steps - s) / max(1, cfg.max_steps - warm))))
    rng = random.Random(cfg.seed)
    losses: list[float] = []
    model.train()
    epoch: list[list[TrainPair]] = []
    while len(losses) < cfg.max_steps:
        if not epoch:
            epoch = batches(train, cfg.batch_size, rng)
            if not epoch:
                raise InputError("too few distinct training pairs for one batch", field="train")
        batch = epoch.pop(0)
        value = mnrl_loss(model, loss, batch, device)
        opt.zero_grad()
        value.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(value.detach()))
        if progress and (len(losses) % 10 == 0 or len(losses) == cfg.max_steps):
            print(f"[train] step {len(losses)}/{cfg.max_steps} loss {losses[-1]:.4f}", flush=True)
    model.eval()
    return losses


def prepare_pairs(graphs: dict[str, KnowledgeGraph], cfg: TrainConfig,
                  ) -> tuple[list[TrainPair], list[TrainPair], int]:
    """Generate from every graph, split by paper, cap: (train, val, n generated)."""
    # local: generating pairs walks the graph with HubLink's hub code (the retriever package, pydantic); training on
    # pairs made elsewhere (bench/bench_gpu.py run on a bare GPU machine) must not need it
    from hublab.training.questions import generate_pairs

    pairs: list[TrainPair] = []
    for name in sorted(graphs):
        pairs += generate_pairs(graphs[name], seed=cfg.seed, phrasings_per_path=cfg.phrasings_per_path,
                                triple_share=cfg.triple_share, false_drop=cfg.false_drop)
    train, val = split_by_paper(pairs, val_fraction=cfg.val_fraction, seed=cfg.seed)
    return cap(train, cfg.max_train_pairs, cfg.seed), cap(val, cfg.max_val_pairs, cfg.seed + 1), len(pairs)


def train_embedder(graphs: dict[str, KnowledgeGraph], cfg: TrainConfig, root: Path, *, log_mlflow: bool = True,
                   progress: bool = False) -> TrainResult:
    """Generate → split → measure base → fine-tune → measure → save to ``<output_dir>/<name>/`` → MLflow."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from hublab.embedding.sentence_transformer import model_identity, resolve_device, resolve_model_path

    t0 = time.perf_counter()
    train, val, n_gen = prepare_pairs(graphs, cfg)
    t_gen = time.perf_counter() - t0
    if not train:
        raise InputError("no training pairs generated (do the graphs have hubs of type Paper?)", field="train.graphs")
    device = resolve_device(cfg.device)
    torch.manual_seed(cfg.seed)
    model = SentenceTransformer(resolve_model_path(cfg.base_model), device=device)  # own copy: it is modified
    seq_len = model.max_seq_length
    model.max_seq_length = min(seq_len, cfg.max_seq_length)  # training truncation only; the saved model keeps its own
    loss = MultipleNegativesRankingLoss(model)
    t1 = time.perf_counter()
    vl0 = validation_loss(model, loss, val, cfg.batch_size, device, cfg.seed)
    mrr0 = mrr_at_k(model, val, val)
    t_eval = time.perf_counter() - t1
    if progress:
        print(f"[train] {len(train)} train / {len(val)} val pairs; base val loss {vl0:.4f}, MRR@10 {mrr0:.4f}; "
              f"{cfg.max_steps} steps on {device}", flush=True)
    t2 = time.perf_counter()
    losses = finetune(model, train, cfg, device, progress=progress)
    t_train = time.perf_counter() - t2
    t3 = time.perf_counter()
    vl1 = validation_loss(model, loss, val, cfg.batch_size, device, cfg.seed)
    mrr1 = mrr_at_k(model, val, val)
    t_eval += time.perf_counter() - t3
    model.max_seq_length = seq_len
    out_dir = (root / cfg.output_dir / cfg.name).resolve()
    if out_dir.exists():
        import shutil

        shutil.rmtree(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    model.save(str(out_dir))
    ident = model_identity(out_dir)
    res = TrainResult(
        model_dir=str(out_dir), identity=ident, device=device, n_pairs_generated=n_gen, n_train_pairs=len(train),
        n_val_pairs=len(val), n_train_papers=len({p.paper for p in train}), n_val_papers=len({p.paper for p in val}),
        steps=len(losses), train_loss_first=losses[0], train_loss_last=float(sum(losses[-5:]) / len(losses[-5:])),
        val_loss_before=vl0, val_loss_after=vl1, mrr10_before=mrr0, mrr10_after=mrr1, generate_s=t_gen,
        train_s=t_train, eval_s=t_eval, wall_s=time.perf_counter() - t0, train_losses=losses)
    if progress:
        print(f"[train] {res.steps} steps in {t_train:.1f}s; val loss {vl0:.4f} -> {vl1:.4f}; "
              f"MRR@10 {mrr0:.4f} -> {mrr1:.4f}; saved {out_dir} ({ident})", flush=True)
    if log_mlflow:
        _log(res, cfg, model, train, val, root)
        res.wall_s = time.perf_counter() - t0
    return res


def _log(res: TrainResult, cfg: TrainConfig, model: Any, train: list[TrainPair], val: list[TrainPair],
         root: Path) -> None:
    # local: the MLflow side (tracking layer, pydantic) is only needed when the run is logged; the GPU benchmark
    # trains without it
    from hublab.tracking.embedder_runs import log_training_run

    logged = log_training_run(
        root, cfg.experiment, f"train-{cfg.name}",
        params={f"train.{k}": json.dumps(v) if isinstance(v, list) else v for k, v in asdict(cfg).items()},
        tags={"hublab.kind": "train", "hublab.embedder_identity": res.identity, "hublab.device": res.device},
        loss_curve=res.train_losses, metrics=res.metrics(),
        samples={"train_sample": [asdict(p) for p in train[:50]], "val_sample": [asdict(p) for p in val[:50]]},
        model=model, model_name=cfg.name, register=cfg.register, identity=res.identity)
    res.run_id, res.model_uri = logged.run_id, logged.model_uri
    res.registered_model, res.version = logged.registered_model, logged.version
