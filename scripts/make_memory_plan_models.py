#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the per-layer models the memory plan is judged on (docs/memory-plan.md §4):
tuner/data/memory-plan/*.json, zb-layers/1 with each block's costs without checkpointing and,
as an option, with full checkpointing.

The costs are computed, not measured: Llama-shaped blocks (grouped-query attention, SwiGLU MLP,
flash attention) in bf16 on an accelerator doing `TFLOPS` of useful work, from the shapes of the
public Llama 3 configurations. Every formula is here and in the docs; the same inputs give the
same files (the files are checked in, this script is how they were made):

  python3 scripts/make_memory_plan_models.py tuner/data/memory-plan
"""

import json
import pathlib
import sys

TFLOPS = 400e12  # useful bf16 FLOP/s of one accelerator (about 40 % of an H100's dense peak)
LINK = 50e9  # bytes/s of a stage-to-stage hop
BF16 = 2
# Per parameter, what a rank holds whatever the order: bf16 weight and gradient, the fp32 master
# copy and AdamW's two fp32 moments sharded over 8 data-parallel replicas (ZeRO-1).
STATE_BYTES = 2 + 2 + 12 / 8


def block_costs(h, ffn, kv, seq):
    """F, B, W (ms), M_B, M_W (bytes) of one transformer block, one sequence per microbatch."""
    params = 2 * h * h + 2 * h * kv + 3 * h * ffn
    matmul = 2 * params * seq  # forward FLOPs of the block's matmuls
    attention = 2 * seq * seq * h  # QK^T and AV, causal: half of 4 s^2 h
    f = (matmul + attention) / TFLOPS * 1e3
    b = (matmul + 2 * attention) / TFLOPS * 1e3  # the input gradient: attention's backward too
    w = matmul / TFLOPS * 1e3  # the weight gradient: the matmuls again
    # Saved per token (elements): both norms' inputs, q k v, attention's output, the o input; the
    # MLP's input, gate and up outputs, the SiLU product, the down input (7h + 2kv + 4ffn).
    m_b = (7 * h + 2 * kv + 4 * ffn) * seq * BF16
    # What W reads: the inputs of the 4 weight matmul groups (3h + ffn) and the output gradients
    # B hands it (q, k, v, o, gate, up, down: 3h + 2kv + 2ffn).
    m_w = (6 * h + 2 * kv + 3 * ffn) * seq * BF16
    return params, f, b, w, m_b, m_w


def checkpointing_options(h, ffn, kv, seq):
    """The block under full and per-op selective checkpointing (docs/memory-plan.md §4)."""
    params, f, b, w, m_b, m_w = block_costs(h, ffn, kv, seq)
    send = seq * h * BF16
    matmul_f = 2 * params * seq / TFLOPS * 1e3
    return [
        # Full, by the rule of docs/memory-plan.md §2: B recomputes the forward, F leaves only
        # the block's input, W reads what it reads without checkpointing.
        {
            "checkpointing": "full",
            "F": round(f, 4),
            "B": round(b + f, 4),
            "W": round(w, 4),
            "M_B": send,
            "M_W": m_w,
            "source": "derived",
        },
        # Per-op selective as torchtitan's policy runs it: attention's output and every second
        # matmul's output saved, B recomputes the other matmuls and the element-wise ops (taken
        # as half the matmul time); F keeps the input, attention's output and half the matmul
        # outputs (3h + 2kv + 2ffn of them): 3.5h + kv + ffn per token.
        {
            "checkpointing": "op",
            "F": round(f, 4),
            "B": round(b + matmul_f / 2, 4),
            "W": round(w, 4),
            "M_B": (3.5 * h + kv + ffn) * seq * BF16,
            "M_W": m_w,
            "source": "derived",
        },
    ]


def transformer_block(index, h, ffn, kv, seq):
    """Block `layers.<index>`: its costs without checkpointing, and under full and op."""
    params, f, b, w, m_b, m_w = block_costs(h, ffn, kv, seq)
    return {
        "name": f"layers.{index}",
        "F": round(f, 4),
        "B": round(b, 4),
        "W": round(w, 4),
        "M_B": m_b,
        "M_W": m_w,
        "state": params * STATE_BYTES,
        "send": seq * h * BF16,
        "checkpointing": "none",
        "options": checkpointing_options(h, ffn, kv, seq),
    }


def model(name, h, ffn, kv, layers, vocab, seq):
    send = seq * h * BF16
    out = []
    embed = vocab * h
    out.append(
        {
            "name": "tok_embeddings",
            "F": 0.05,
            "B": 0,
            "W": 0.2,
            "M_B": seq * 8,
            "M_W": 0,
            "state": embed * STATE_BYTES,
            "send": send,
        }
    )
    out.extend(transformer_block(i, h, ffn, kv, seq) for i in range(layers))
    out.append(
        {
            "name": "norm",
            "F": 0.1,
            "B": 0.1,
            "W": 0.01,
            "M_B": send,
            "M_W": 0,
            "state": h * STATE_BYTES,
            "send": send,
        }
    )
    head = 2 * h * vocab * seq
    # The head with the loss: bf16 logits and the fp32 softmax the cross-entropy keeps.
    out.append(
        {
            "name": "output",
            "F": round(head / TFLOPS * 1e3, 4),
            "B": round(head / TFLOPS * 1e3, 4),
            "W": round(head / TFLOPS * 1e3, 4),
            "M_B": seq * vocab * (BF16 + 4) + send,
            "M_W": send,
            "state": h * vocab * STATE_BYTES,
            "send": 0,
        }
    )
    comm = round(send / LINK * 1e3, 4)
    return name, {"format": "zb-layers/1", "comm": comm, "source": "measured", "layers": out}


def uniform(name, blocks):
    """A control with no head or embedding: equal blocks (the shape of the 8B one)."""
    send = 8192 * 4096 * BF16
    out = [transformer_block(i, 4096, 14336, 1024, 8192) for i in range(blocks)]
    return name, {
        "format": "zb-layers/1",
        "comm": round(send / LINK * 1e3, 4),
        "source": "measured",
        "layers": out,
    }


MODELS = [
    # Llama 3 70B: 80 blocks, h 8192, ffn 28672, 8 KV heads of 128, vocab 128256; 4k sequences.
    model("llama70b-4k", 8192, 28672, 1024, 80, 128256, 4096),
    # Llama 3 8B: 32 blocks, h 4096, ffn 14336, 8 KV heads of 128, the 128k vocabulary; 8k tokens.
    model("llama8b-8k", 4096, 14336, 1024, 32, 128256, 8192),
    # Llama 3 405B: 126 blocks, h 16384, ffn 53248, 8 KV heads; 129 blocks in all (the timing).
    model("llama405b-4k", 16384, 53248, 1024, 126, 128256, 4096),
    uniform("uniform-32", 32),
]


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    folder = pathlib.Path(argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    for name, document in MODELS:
        lines = [json.dumps(layer) for layer in document["layers"]]
        head = {k: v for k, v in document.items() if k != "layers"}
        text = json.dumps(head)[:-1] + ',\n "layers": [\n  ' + ",\n  ".join(lines) + "]}\n"
        (folder / f"{name}.json").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
