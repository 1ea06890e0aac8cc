"""CUDA paths of HubLab on a GPU machine without the project's environment: embeddings and embedder fine-tuning.

Two steps, because the GPU machine has torch and sentence-transformers but not HubLab's other dependencies, and
no network:

    .venv/bin/python bench/bench_gpu.py export .gpu            # here: model (float16 copy), texts, questions, pairs
    python3 bench/bench_gpu.py run .gpu                        # there: PYTHONPATH=src, prints the figures as JSON

``run`` imports only torch, sentence-transformers (with what it installs: transformers, datasets, pandas, PyYAML),
numpy and HubLab's own embedding and training modules (``tests/training/test_bench_gpu_bare.py`` runs it with
everything else blocked).

``export`` writes the bundled MiniLM with float16 weights (the 87 MB float32 file exceeds what may travel to the
device; both precisions below start from the same rounded weights, so they compare like with like), the GV3
export's triple texts (HubLink's ``triple_text``), the 170 KGQA questions, and the training pairs HubLab's
``hublab train`` would generate from the GV3 export (``prepare_pairs``).

``run`` measures, on CPU and on CUDA of the same machine, with HubLab's own code (``SentenceTransformerEmbedder``,
``training.finetune``):
* embedding throughput: the portable path (CPU, float64 forward, canonical batches of 8) vs. CUDA float32 in
  batches of ``GPU_BATCH`` (256) over the sorted distinct texts (``embed``'s GPU path), and plain ``encode`` with
  batch 256 on CUDA (float32 and float16); whether a second ``embed`` of the same texts gives identical vectors;
* agreement: the largest component difference between the CUDA and the portable CPU vectors, and for every
  question the top 10 texts by cosine (scores rounded to 6 decimals, ties by text): identical lists, same sets;
* fine-tuning: ``finetune`` with ``params.yaml``'s train settings on CPU and CUDA (seconds per step), and a
  larger run on CUDA (the docs' suggestion for a GPU), each with MRR@10 on the held-out pairs before and after.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def export(out: Path) -> None:
    from hublab.env import apply_offline_defaults

    apply_offline_defaults()
    import torch
    import yaml
    from safetensors.torch import load_file, save_file

    from hublab.embedding.sentence_transformer import resolve_model_path
    from hublab.graph.rdf import RdfKnowledgeGraph
    from hublab.retrievers.methods.hublink.text import triple_text
    from hublab.training.finetune import TrainConfig, prepare_pairs

    out.mkdir(parents=True, exist_ok=True)
    src = Path(resolve_model_path(None))
    dst = out / "model"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("model.safetensors", "README.md"))
    weights = load_file(str(src / "model.safetensors"))
    save_file({k: v.to(torch.float16) if v.is_floating_point() else v for k, v in weights.items()},
              str(dst / "model.safetensors"))
    shared = ROOT.parent / "shared" / "data"
    g = RdfKnowledgeGraph.load(shared / "orkg" / "gv3_flat_distributed.json", name="gv3_orkg")
    texts = sorted({triple_text(t) for t in g.triples()})
    with open(shared / "kgqa" / "flat_distributed.csv", newline="", encoding="utf-8") as f:
        questions = [row["question"] for row in csv.DictReader(f)]
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    cfg = TrainConfig.from_dict({**params["train"], "graphs": ["gv3_orkg"]})
    big = replace(cfg, max_train_pairs=8000, max_steps=500)
    sets = {}
    for name, c in (("default", cfg), ("large", big)):
        train, val, n_gen = prepare_pairs({"gv3_orkg": g}, c)
        sets[name] = {"config": asdict(c), "n_generated": n_gen, "train": [asdict(p) for p in train],
                      "val": [asdict(p) for p in val]}
    (out / "data.json").write_text(json.dumps({"texts": texts, "questions": questions, "pairs": sets}))
    print(f"exported to {out}: {len(texts)} texts, {len(questions)} questions, "
          f"{len(sets['default']['train'])}/{len(sets['large']['train'])} train pairs")


def _timed(fn):
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    value = fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return value, time.perf_counter() - t0


def _top10(q, c, texts):
    import numpy as np

    scores = np.round(q.astype(np.float64) @ c.astype(np.float64).T, 6)
    order = np.argsort(np.array(texts, dtype=object))  # ties broken by text
    rank = np.empty(len(texts), dtype=np.int64)
    rank[order] = np.arange(len(texts))
    return [tuple(np.lexsort((rank, -row))[:10]) for row in scores]


def _float32(model):
    """The float16 weights as float32 (transformers may keep a checkpoint's own dtype)."""
    import torch

    return model.to(torch.float32)


def run(data_dir: Path, devices: tuple[str, ...], limit: int | None) -> dict:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    from hublab.embedding import sentence_transformer as st
    from hublab.training.finetune import TrainConfig, mrr_at_k
    from hublab.training.finetune import finetune as hublab_finetune
    from hublab.training.pairs import TrainPair

    data = json.loads((data_dir / "data.json").read_text())
    model_dir = str(data_dir / "model")
    texts, questions = data["texts"][:limit], data["questions"][:limit]
    gpu = "cuda" in devices
    report: dict = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0) if gpu else None,
                    "cpu_threads": torch.get_num_threads(), "n_texts": len(texts), "n_questions": len(questions)}
    vecs = {}
    for device in devices:
        emb = st.SentenceTransformerEmbedder(model_dir, device=device)
        if device != "cpu":
            _float32(emb._model)
        emb.embed(texts[:64])  # warm-up (CUDA context, kernels)
        v, secs = _timed(lambda emb=emb: emb.embed(texts))
        report[f"embed_{device}_repeat_identical"] = bool(np.array_equal(v, emb.embed(texts)))
        q = emb.embed(questions)
        vecs[device] = (v, q)
        report[f"embed_{device}_s"] = round(secs, 2)
        report[f"embed_{device}_texts_per_s"] = round(len(texts) / secs, 1)
    for dtype in (torch.float32, torch.float16) if gpu else ():
        m = SentenceTransformer(model_dir, device="cuda").to(dtype)
        m.encode(texts[:256], batch_size=256)
        _, secs = _timed(lambda m=m: m.encode(texts, batch_size=256, convert_to_numpy=True, show_progress_bar=False))
        report[f"encode_cuda_{str(dtype).split('.')[-1]}_b256_texts_per_s"] = round(len(texts) / secs, 1)
    (vc, qc), (vg, qg) = vecs["cpu"], vecs[devices[-1]]
    report["max_abs_diff_cuda_vs_portable"] = float(np.abs(vc - vg).max())
    top_c, top_g = _top10(qc, vc, texts), _top10(qg, vg, texts)
    report["top10_identical_lists"] = sum(a == b for a, b in zip(top_c, top_g, strict=True))
    report["top10_same_sets"] = sum(set(a) == set(b) for a, b in zip(top_c, top_g, strict=True))

    def pairs(rows):
        return [TrainPair(**r) for r in rows]

    for label, on in (("default", devices), ("large", devices[1:])):
        block = data["pairs"][label]
        cfg = TrainConfig.from_dict(block["config"])
        train, val = pairs(block["train"]), pairs(block["val"])
        if limit:  # a smoke test: 3 steps, and MRR@10 over N held-out pairs instead of all 200
            cfg, val = replace(cfg, max_steps=3), val[:limit]
        report[f"train_{label}"] = {"n_train": len(train), "n_val": len(val), "steps": cfg.max_steps,
                                    "batch_size": cfg.batch_size}
        for device in on:
            torch.manual_seed(cfg.seed)
            model = _float32(SentenceTransformer(model_dir, device=device))
            model.max_seq_length = min(model.max_seq_length, cfg.max_seq_length)
            mrr0 = mrr_at_k(model, val, val)
            losses, secs = _timed(lambda model=model, cfg=cfg, device=device, train=train:
                                  hublab_finetune(model, train, cfg, device))
            report[f"train_{label}"][device] = {
                "train_s": round(secs, 2), "s_per_step": round(secs / cfg.max_steps, 4),
                "loss_first": round(losses[0], 4), "loss_last5": round(sum(losses[-5:]) / len(losses[-5:]), 4),
                "mrr10_before": round(mrr0, 4), "mrr10_after": round(mrr_at_k(model, val, val), 4)}
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=["export", "run"])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--devices", default="cpu,cuda", help="run: the first is the reference (cpu: portable path)")
    ap.add_argument("--limit", type=int,
                    help="run: first N texts, questions and held-out pairs, 3 training steps (a smoke test)")
    args = ap.parse_args()
    if args.step == "export":
        export(args.dir)
    else:
        print(json.dumps(run(args.dir, tuple(args.devices.split(",")), args.limit), indent=1))


if __name__ == "__main__":
    main()
