"""A BERT encoder's forward pass (sentence-transformers: Transformer -> mean Pooling ->
Normalize) with every matrix product exact (:mod:`rrfbench.core.exact_products`): the same
embeddings to the bit on every x86-64 CPU, without pinning MKL to its slow vendor-neutral branch.

The pass is transformers' eager ``BertModel`` (embeddings, then per layer: self-attention, its
output projection with residual and LayerNorm, the feed-forward block with GELU and residual and
LayerNorm), written out so that no product is hidden in a fused kernel:

* the linear layers are one exact product each (query, key and value as one product with
  their weights side by side), the bias added afterwards in float32;
* attention is two exact products, QK^T and PV, with the scaling, the mask and the softmax
  between them outside any product (``scaled_dot_product_attention`` on CPU calls sgemm
  inside: ``aten/src/ATen/native/cpu/FlashAttentionKernel.cpp``);
* mean pooling is the attention mask times the token states, one exact product per text, then
  a float32 division by the token count.

What is left are ATen's own elementwise and row kernels (embedding lookup, additions,
LayerNorm, erf-form GELU, softmax, the final L2 norm), which follow ATen's dispatch level:
capped at AVX2 (:mod:`rrfbench.core.portable_math`), they give the same bits on every x86-64
CPU with AVX2. ``tests/retrievers/test_exact_bert.py`` checks the pass against
sentence-transformers' own (the same embeddings to float32 noise) and that a product changed
back to plain float32 changes bits.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..core.exact_products import exact_linear, exact_matmul, exact_scores, weight_grid

ATTENTION_CHUNK = 4  # texts per attention step: 4 x 12 heads x 256^2 float64 scores = 25 MB

EXACT_RECIPE = ("exact matrix products (float64 sums of fixed-point integers, "
                "21-24 bits per row/column)")


OTHER_POOLING = ("cls_token", "max_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens",
                 "lasttoken")


def supports(model) -> bool:
    """Whether ``model`` (a SentenceTransformer) is one this pass reproduces: a BERT with
    absolute positions and erf GELU, mean pooling, and optionally Normalize."""
    mods = list(model._modules.values())
    if not mods or type(mods[0]).__name__ != "Transformer":
        return False
    auto = getattr(mods[0], "auto_model", None)
    cfg = getattr(auto, "config", None)
    if cfg is None or cfg.model_type != "bert" or cfg.hidden_act != "gelu" or \
            getattr(cfg, "position_embedding_type", "absolute") != "absolute":
        return False
    rest = [type(m).__name__ for m in mods[1:]]
    if rest not in (["Pooling"], ["Pooling", "Normalize"]):
        return False
    config = mods[1].get_config_dict() if hasattr(mods[1], "get_config_dict") else {}
    mode = config.get("pooling_mode")  # sentence-transformers 5: one mode by name
    if mode is not None:
        return mode == "mean" and config.get("include_prompt", True)
    return bool(config.get("pooling_mode_mean_tokens")) and not any(
        config.get(f"pooling_mode_{m}") for m in OTHER_POOLING)


def supports_folder(path) -> bool:
    """:func:`supports` read from a model folder's files, without loading it (the backend's
    label, part of every embedding cache key, must be known before the model is)."""
    path = Path(path)
    try:
        cfg = json.loads((path / "config.json").read_text())
        modules = json.loads((path / "modules.json").read_text())
    except (OSError, ValueError):
        return False
    if cfg.get("model_type") != "bert" or cfg.get("hidden_act") != "gelu" or \
            cfg.get("position_embedding_type", "absolute") != "absolute":
        return False
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return False
    try:
        pool = json.loads((path / modules[1]["path"] / "config.json").read_text())
    except (OSError, ValueError, KeyError):
        return False
    if "pooling_mode" in pool:
        return pool["pooling_mode"] == "mean" and pool.get("include_prompt", True)
    return bool(pool.get("pooling_mode_mean_tokens")) and not any(
        pool.get(f"pooling_mode_{m}") for m in OTHER_POOLING)


class ExactBert:
    """The forward pass of a supported SentenceTransformer (:func:`supports`), its weights
    put on the grid once."""

    def __init__(self, model):
        import torch

        bert = model[0].auto_model
        self.cfg = bert.config
        emb = bert.embeddings
        self.word = emb.word_embeddings.weight.detach()
        self.position = emb.position_embeddings.weight.detach()
        self.token_type = emb.token_type_embeddings.weight.detach()
        self.emb_norm = (emb.LayerNorm.weight.detach(), emb.LayerNorm.bias.detach(),
                         emb.LayerNorm.eps)
        self.layers = []
        for layer in bert.encoder.layer:
            att = layer.attention
            qkv_w = torch.cat([att.self.query.weight, att.self.key.weight,
                               att.self.value.weight]).detach()
            qkv_b = torch.cat([att.self.query.bias, att.self.key.bias,
                               att.self.value.bias]).detach()
            self.layers.append({
                "qkv": (weight_grid(qkv_w), qkv_b),
                "att_out": (weight_grid(att.output.dense.weight.detach()),
                            att.output.dense.bias.detach()),
                "att_norm": (att.output.LayerNorm.weight.detach(),
                             att.output.LayerNorm.bias.detach(), att.output.LayerNorm.eps),
                "up": (weight_grid(layer.intermediate.dense.weight.detach()),
                       layer.intermediate.dense.bias.detach()),
                "down": (weight_grid(layer.output.dense.weight.detach()),
                         layer.output.dense.bias.detach()),
                "out_norm": (layer.output.LayerNorm.weight.detach(),
                             layer.output.LayerNorm.bias.detach(), layer.output.LayerNorm.eps),
            })

    @staticmethod
    def _attention(qkv, key_mask, scaling: float):
        """softmax(QK^T * scaling + mask) V for a few texts: two exact products (the float32
        scaling and mask applied as the first one's sums are scaled back), the softmax ATen's
        (a few texts at a time keep the score tensors in the CPU's cache)."""
        import torch

        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = exact_scores(q, k, scaling, key_mask)
        return exact_matmul(torch.softmax(scores, dim=-1), v)

    def __call__(self, features: dict):
        """L2-normalised sentence embeddings (float32, one row per text) of tokenised ``features``
        (``input_ids``, ``attention_mask``, optional ``token_type_ids``)."""
        import torch
        import torch.nn.functional as F

        ids = features["input_ids"]
        mask = features["attention_mask"]
        types = features.get("token_type_ids")
        if types is None:
            types = torch.zeros_like(ids)
        n, s = ids.shape
        heads = self.cfg.num_attention_heads
        d = self.cfg.hidden_size // heads
        with torch.inference_mode():
            x = self.word[ids] + self.token_type[types]
            x = x + self.position[:s].unsqueeze(0)
            x = F.layer_norm(x, x.shape[-1:], *self.emb_norm[:2], eps=self.emb_norm[2])
            key_mask = (1.0 - mask.to(torch.float32)) * torch.finfo(torch.float32).min
            scaling = 1.0 / math.sqrt(d)
            for p in self.layers:
                qkv = exact_linear(x, *p["qkv"]).view(n, s, 3, heads, d).permute(2, 0, 3, 1, 4)
                ctx = torch.empty((n, heads, s, d), dtype=torch.float32)
                for a in range(0, n, ATTENTION_CHUNK):
                    ctx[a:a + ATTENTION_CHUNK] = self._attention(
                        qkv[:, a:a + ATTENTION_CHUNK], key_mask[a:a + ATTENTION_CHUNK], scaling)
                ctx = ctx.transpose(1, 2).reshape(n, s, heads * d)
                x = F.layer_norm(exact_linear(ctx, *p["att_out"], residual=x), x.shape[-1:],
                                 *p["att_norm"][:2], eps=p["att_norm"][2])
                h = F.gelu(exact_linear(x, *p["up"]))
                x = F.layer_norm(exact_linear(h, *p["down"], residual=x), x.shape[-1:],
                                 *p["out_norm"][:2], eps=p["out_norm"][2])
            m = mask.to(torch.float32)
            pooled = exact_matmul(m.unsqueeze(1), x).squeeze(1)
            pooled = pooled / m.sum(dim=1, keepdim=True).clamp(min=1e-9)
            pooled = F.normalize(pooled, p=2, dim=1)  # the retriever's contract: unit rows
        return pooled
