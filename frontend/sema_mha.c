// frontend/sema_mha.c: the nn modules made of other modules, as pasted model code makes them:
//   nn.MultiheadAttention(embed_dim, num_heads, ...), nn.TransformerEncoderLayer(d_model, nhead, ...)
// and nn.TransformerDecoderLayer, and F.multi_head_attention_forward(...); and a call through an nn
// object of an attribute holding a module (layer.norm1(x)). Each is PyTorch 1.13's own Python
// (torch/nn/functional.py, modules/activation.py, modules/transformer.py) written in tdsl below: its
// __init__ sets the object's attributes (its submodules made as any nn.Linear or nn.LayerNorm is), its
// forward computes from them, in eval mode (dropout is the identity; training=True with dropout_p > 0
// is refused as F.dropout refuses it). The attention itself is F.scaled_dot_product_attention (one
// fused kernel) when the weights are not asked for, else PyTorch's scaled scores, softmax and product.
// The heads are kept as (bsz, num_heads, len, head_dim) views where PyTorch reshapes them to
// (bsz * num_heads, len, head_dim) batches: the same values, without the copies.
// An object is TY_MODULE "torch.nn.MultiheadAttention" (ctor its construction call) with attributes
// (sema_object.c): the parameters PyTorch registers start unset, to be set by the program as an
// nn.Linear's are (`mha.in_proj_weight = w`, checked as load_state_dict checks them), those PyTorch
// registers as None set to None by __init__.
// Invariants: each __init__ and forward is a fn inside a function (sema_lambda.c's DEF_LOCAL, its
// parameters untyped), parsed anew from the source here for each construction and each call and
// placed at that call (relocate), so that every message, Python's argument errors and PyTorch's
// asserts alike, is located at the user's line; its name is the method's ("MultiheadAttention.forward").
#include "frontend/sema_internal.h"

#include <string.h>

// _get_activation_fn(activation) of a str, as __init__ runs it
#define ACTIVATION_BY_NAME \
    "    if isinstance(activation, str) {\n" \
    "        if activation == \"relu\" {\n" \
    "            activation = F.relu\n" \
    "        } elif activation == \"gelu\" {\n" \
    "            activation = F.gelu\n" \
    "        } else {\n" \
    "            raise RuntimeError(f\"activation should be relu/gelu, not {activation}\")\n" \
    "        }\n" \
    "    }\n" \
    "    self.activation = activation\n"

#define MHA_FUNCTIONAL \
    "    fn multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight," \
        " in_proj_bias,\n" \
    "            bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training=True,\n" \
    "            key_padding_mask=None, need_weights=True, attn_mask=None, use_separate_proj_weight=False,\n" \
    "            q_proj_weight=None, k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None,\n" \
    "            average_attn_weights=True, _batch_first=False) {\n" \
    "        # _batch_first (nn.MultiheadAttention's batch_first=True): query, key and value are batch-first" \
        " tensors\n" \
    "        # transposed; the projections run on their rows as stored, the same values without the strided GEMM\n" \
    "        fn proj(t, w, b) {\n" \
    "            return F.linear(t.transpose(0, 1), w, b).transpose(0, 1) if _batch_first else F.linear(t, w, b)\n" \
    "        }\n" \
    "        if query.dim() == 3 {\n" \
    "            is_batched = True\n" \
    "            assert key.dim() == 3 and value.dim() == 3, f\"For batched (3-D) `query`, expected `key` and" \
        " `value` to be 3-D but found {key.dim()}-D and {value.dim()}-D tensors respectively\"\n" \
    "            if key_padding_mask is not None {\n" \
    "                assert key_padding_mask.dim() == 2, f\"For batched (3-D) `query`, expected `key_padding_mask`" \
        " to be `None` or 2-D but found {key_padding_mask.dim()}-D tensor instead\"\n" \
    "            }\n" \
    "            if attn_mask is not None {\n" \
    "                assert attn_mask.dim() in (2, 3), f\"For batched (3-D) `query`, expected `attn_mask` to be" \
        " `None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor instead\"\n" \
    "            }\n" \
    "        } elif query.dim() == 2 {\n" \
    "            is_batched = False\n" \
    "            assert key.dim() == 2 and value.dim() == 2, f\"For unbatched (2-D) `query`, expected `key` and" \
        " `value` to be 2-D but found {key.dim()}-D and {value.dim()}-D tensors respectively\"\n" \
    "            if key_padding_mask is not None {\n" \
    "                assert key_padding_mask.dim() == 1, f\"For unbatched (2-D) `query`, expected `key_padding_mask`" \
        " to be `None` or 1-D but found {key_padding_mask.dim()}-D tensor instead\"\n" \
    "            }\n" \
    "            if attn_mask is not None {\n" \
    "                assert attn_mask.dim() in (2, 3), f\"For unbatched (2-D) `query`, expected `attn_mask` to be" \
        " `None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor instead\"\n" \
    "                if attn_mask.dim() == 3 {\n" \
    "                    expected_shape = (num_heads, query.shape[0], key.shape[0])\n" \
    "                    assert attn_mask.shape == expected_shape, f\"Expected `attn_mask` shape to be" \
        " {expected_shape} but got {attn_mask.shape}\"\n" \
    "                }\n" \
    "            }\n" \
    "        } else {\n" \
    "            raise AssertionError(f\"query should be unbatched 2D or batched 3D tensor but received" \
        " {query.dim()}-D query tensor\")\n" \
    "        }\n" \
    "        if not is_batched {\n" \
    "            query = query.unsqueeze(1)\n" \
    "            key = key.unsqueeze(1)\n" \
    "            value = value.unsqueeze(1)\n" \
    "            if key_padding_mask is not None {\n" \
    "                key_padding_mask = key_padding_mask.unsqueeze(0)\n" \
    "            }\n" \
    "        }\n" \
    "        tgt_len, bsz, embed_dim = query.shape\n" \
    "        src_len, _, _ = key.shape\n" \
    "        if key_padding_mask is not None {\n" \
    "            if key_padding_mask.dtype != torch.bool and not torch.is_floating_point(key_padding_mask) {\n" \
    "                raise AssertionError(\"only bool and floating types of key_padding_mask are supported\")\n" \
    "            }\n" \
    "        }\n" \
    "        assert embed_dim == embed_dim_to_check, f\"was expecting embedding dimension of {embed_dim_to_check}," \
        " but got {embed_dim}\"\n" \
    "        head_dim = embed_dim // num_heads\n" \
    "        assert head_dim * num_heads == embed_dim, f\"embed_dim {embed_dim} not divisible by num_heads" \
        " {num_heads}\"\n" \
    "        if use_separate_proj_weight {\n" \
    "            assert key.shape[:2] == value.shape[:2], f\"key's sequence and batch dims {key.shape[:2]} do not" \
        " match value's {value.shape[:2]}\"\n" \
    "        } else {\n" \
    "            assert key.shape == value.shape, f\"key shape {key.shape} does not match value shape" \
        " {value.shape}\"\n" \
    "        }\n" \
    "        if not use_separate_proj_weight {\n" \
    "            assert in_proj_weight is not None, \"use_separate_proj_weight is False but in_proj_weight is" \
        " None\"\n" \
    "            E = query.size(-1)\n" \
    "            if key is value and query is key {\n" \
    "                q, k, v = proj(query, in_proj_weight, in_proj_bias).chunk(3, dim=-1)\n" \
    "            } elif key is value {\n" \
    "                w_q, w_kv = in_proj_weight.split([E, E * 2])\n" \
    "                b_q, b_kv = (None, None) if in_proj_bias is None else in_proj_bias.split([E, E * 2])\n" \
    "                q = proj(query, w_q, b_q)\n" \
    "                k, v = proj(key, w_kv, b_kv).chunk(2, dim=-1)\n" \
    "            } else {\n" \
    "                w_q, w_k, w_v = in_proj_weight.chunk(3)\n" \
    "                b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)\n" \
    "                q, k, v = proj(query, w_q, b_q), proj(key, w_k, b_k), proj(value, w_v, b_v)\n" \
    "            }\n" \
    "        } else {\n" \
    "            assert q_proj_weight is not None, \"use_separate_proj_weight is True but q_proj_weight is None\"\n" \
    "            assert k_proj_weight is not None, \"use_separate_proj_weight is True but k_proj_weight is None\"\n" \
    "            assert v_proj_weight is not None, \"use_separate_proj_weight is True but v_proj_weight is None\"\n" \
    "            b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)\n" \
    "            Eq, Ek, Ev = query.size(-1), key.size(-1), value.size(-1)\n" \
    "            assert q_proj_weight.shape == (Eq, Eq), f\"expecting query weights shape of {(Eq, Eq)}, but got" \
        " {q_proj_weight.shape}\"\n" \
    "            assert k_proj_weight.shape == (Eq, Ek), f\"expecting key weights shape of {(Eq, Ek)}, but got" \
        " {k_proj_weight.shape}\"\n" \
    "            assert v_proj_weight.shape == (Eq, Ev), f\"expecting value weights shape of {(Eq, Ev)}, but got" \
        " {v_proj_weight.shape}\"\n" \
    "            assert b_q is None or b_q.shape == (Eq,), f\"expecting query bias shape of {(Eq,)}, but got" \
        " {b_q.shape}\"\n" \
    "            q, k, v = proj(query, q_proj_weight, b_q), proj(key, k_proj_weight, b_k), proj(value," \
        " v_proj_weight, b_v)\n" \
    "        }\n" \
    "        if attn_mask is not None {\n" \
    "            if attn_mask.dtype == torch.uint8 {\n" \
    "                attn_mask = attn_mask.to(torch.bool)\n" \
    "            } else {\n" \
    "                assert attn_mask.is_floating_point() or attn_mask.dtype == torch.bool, f\"Only float, byte, and" \
        " bool types are supported for attn_mask, not {attn_mask.dtype}\"\n" \
    "            }\n" \
    "            if attn_mask.dim() == 2 {\n" \
    "                correct_2d_size = (tgt_len, src_len)\n" \
    "                if attn_mask.shape != correct_2d_size {\n" \
    "                    raise RuntimeError(f\"The shape of the 2D attn_mask is {attn_mask.shape}, but should be" \
        " {correct_2d_size}.\")\n" \
    "                }\n" \
    "                attn_mask = attn_mask.unsqueeze(0)\n" \
    "            } elif attn_mask.dim() == 3 {\n" \
    "                correct_3d_size = (bsz * num_heads, tgt_len, src_len)\n" \
    "                if attn_mask.shape != correct_3d_size {\n" \
    "                    raise RuntimeError(f\"The shape of the 3D attn_mask is {attn_mask.shape}, but should be" \
        " {correct_3d_size}.\")\n" \
    "                }\n" \
    "            } else {\n" \
    "                raise RuntimeError(f\"attn_mask's dimension {attn_mask.dim()} is not supported\")\n" \
    "            }\n" \
    "        }\n" \
    "        if bias_k is not None and bias_v is not None {\n" \
    "            assert static_k is None, \"bias cannot be added to static key.\"\n" \
    "            assert static_v is None, \"bias cannot be added to static value.\"\n" \
    "            k = torch.cat([k, bias_k.repeat(1, bsz, 1)])\n" \
    "            v = torch.cat([v, bias_v.repeat(1, bsz, 1)])\n" \
    "            if attn_mask is not None {\n" \
    "                attn_mask = F.pad(attn_mask, (0, 1))\n" \
    "            }\n" \
    "            if key_padding_mask is not None {\n" \
    "                key_padding_mask = F.pad(key_padding_mask, (0, 1))\n" \
    "            }\n" \
    "        } else {\n" \
    "            assert bias_k is None\n" \
    "            assert bias_v is None\n" \
    "        }\n" \
    "        # as PyTorch's (bsz * num_heads, len, head_dim) batches, kept as (bsz, num_heads, len, head_dim) views\n" \
    "        q = q.view(tgt_len, bsz, num_heads, head_dim).permute(1, 2, 0, 3)\n" \
    "        if static_k is None {\n" \
    "            k = k.view(k.shape[0], bsz, num_heads, head_dim).permute(1, 2, 0, 3)\n" \
    "        } else {\n" \
    "            assert static_k.size(0) == bsz * num_heads, f\"expecting static_k.size(0) of {bsz * num_heads}, but" \
        " got {static_k.size(0)}\"\n" \
    "            assert static_k.size(2) == head_dim, f\"expecting static_k.size(2) of {head_dim}, but got" \
        " {static_k.size(2)}\"\n" \
    "            k = static_k.view(bsz, num_heads, static_k.size(1), head_dim)\n" \
    "        }\n" \
    "        if static_v is None {\n" \
    "            v = v.view(v.shape[0], bsz, num_heads, head_dim).permute(1, 2, 0, 3)\n" \
    "        } else {\n" \
    "            assert static_v.size(0) == bsz * num_heads, f\"expecting static_v.size(0) of {bsz * num_heads}, but" \
        " got {static_v.size(0)}\"\n" \
    "            assert static_v.size(2) == head_dim, f\"expecting static_v.size(2) of {head_dim}, but got" \
        " {static_v.size(2)}\"\n" \
    "            v = static_v.view(bsz, num_heads, static_v.size(1), head_dim)\n" \
    "        }\n" \
    "        if attn_mask is not None {\n" \
    "            attn_mask = attn_mask.view(1, 1, tgt_len, attn_mask.size(-1)) if attn_mask.size(0) == 1 else" \
        " attn_mask.view(bsz, num_heads, tgt_len, attn_mask.size(-1))\n" \
    "        }\n" \
    "        if add_zero_attn {\n" \
    "            zero_attn_shape = (bsz, num_heads, 1, head_dim)\n" \
    "            k = torch.cat([k, torch.zeros(zero_attn_shape, dtype=k.dtype)], dim=2)\n" \
    "            v = torch.cat([v, torch.zeros(zero_attn_shape, dtype=v.dtype)], dim=2)\n" \
    "            if attn_mask is not None {\n" \
    "                attn_mask = F.pad(attn_mask, (0, 1))\n" \
    "            }\n" \
    "            if key_padding_mask is not None {\n" \
    "                key_padding_mask = F.pad(key_padding_mask, (0, 1))\n" \
    "            }\n" \
    "        }\n" \
    "        src_len = k.size(2)\n" \
    "        if key_padding_mask is not None {\n" \
    "            assert key_padding_mask.shape == (bsz, src_len), f\"expecting key_padding_mask shape of {(bsz," \
        " src_len)}, but got {key_padding_mask.shape}\"\n" \
    "            key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len)\n" \
    "            if attn_mask is None {\n" \
    "                attn_mask = key_padding_mask\n" \
    "            } elif attn_mask.dtype == torch.bool {\n" \
    "                attn_mask = attn_mask.logical_or(key_padding_mask)\n" \
    "            } else {\n" \
    "                attn_mask = attn_mask.masked_fill(key_padding_mask, float(\"-inf\"))\n" \
    "            }\n" \
    "        }\n" \
    "        if attn_mask is not None and attn_mask.dtype == torch.bool {\n" \
    "            attn_mask = torch.zeros_like(attn_mask, dtype=q.dtype).masked_fill(attn_mask, float(\"-inf\"))\n" \
    "        }\n" \
    "        if not training {\n" \
    "            dropout_p = 0.0\n" \
    "        }\n" \
    "        if need_weights or dropout_p > 0.0 {\n" \
    "            q_scaled = q / math.sqrt(head_dim)\n" \
    "            attn_output_weights = q_scaled @ k.transpose(-2, -1)\n" \
    "            if attn_mask is not None {\n" \
    "                attn_output_weights = attn_mask + attn_output_weights\n" \
    "            }\n" \
    "            attn_output_weights = F.softmax(attn_output_weights, dim=-1)\n" \
    "            if dropout_p > 0.0 {\n" \
    "                attn_output_weights = F.dropout(attn_output_weights, p=dropout_p)\n" \
    "            }\n" \
    "            attn_output = attn_output_weights @ v\n" \
    "        } else {\n" \
    "            attn_output = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)\n" \
    "        }\n" \
    "        if _batch_first {\n" \
    "            attn_output = attn_output.permute(0, 2, 1, 3).reshape(bsz, tgt_len, embed_dim)\n" \
    "            attn_output = F.linear(attn_output, out_proj_weight, out_proj_bias).transpose(0, 1)\n" \
    "        } else {\n" \
    "            attn_output = attn_output.permute(2, 0, 1, 3).reshape(tgt_len * bsz, embed_dim)\n" \
    "            attn_output = F.linear(attn_output, out_proj_weight, out_proj_bias)\n" \
    "            attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))\n" \
    "        }\n" \
    "        if need_weights {\n" \
    "            if average_attn_weights {\n" \
    "                attn_output_weights = attn_output_weights.sum(dim=1) / num_heads\n" \
    "            }\n" \
    "            if not is_batched {\n" \
    "                attn_output = attn_output.squeeze(1)\n" \
    "                attn_output_weights = attn_output_weights.squeeze(0)\n" \
    "            }\n" \
    "            return attn_output, attn_output_weights\n" \
    "        }\n" \
    "        if not is_batched {\n" \
    "            attn_output = attn_output.squeeze(1)\n" \
    "        }\n" \
    "        return attn_output, None\n" \
    "    }\n"

static const char mha_source[] =
    "fn __init__(self, embed_dim, num_heads, dropout=0., bias=True, add_bias_kv=False, add_zero_attn=False,"
        " kdim=None,\n"
    "        vdim=None, batch_first=False, device=None, dtype=None) {\n"
    "    self.embed_dim = embed_dim\n"
    "    self.kdim = kdim if kdim is not None else embed_dim\n"
    "    self.vdim = vdim if vdim is not None else embed_dim\n"
    "    self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim\n"
    "    self.num_heads = num_heads\n"
    "    self.dropout = dropout\n"
    "    self.batch_first = batch_first\n"
    "    self.head_dim = embed_dim // num_heads\n"
    "    assert self.head_dim * num_heads == self.embed_dim, \"embed_dim must be divisible by num_heads\"\n"
    "    if not self._qkv_same_embed_dim {\n"
    "        self.in_proj_weight = None\n"
    "    } else {\n"
    "        self.q_proj_weight = None\n"
    "        self.k_proj_weight = None\n"
    "        self.v_proj_weight = None\n"
    "    }\n"
    "    if not bias {\n"
    "        self.in_proj_bias = None\n"
    "    }\n"
    "    self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)\n"
    "    if not add_bias_kv {\n"
    "        self.bias_k = None\n"
    "        self.bias_v = None\n"
    "    }\n"
    "    self.add_zero_attn = add_zero_attn\n"
    "}\n"
    "fn forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,\n"
    "        average_attn_weights=True) {\n"
    MHA_FUNCTIONAL
    "    is_batched = query.dim() == 3\n"
    "    if key_padding_mask is not None {\n"
    "        if key_padding_mask.dtype != torch.bool and not torch.is_floating_point(key_padding_mask) {\n"
    "            raise AssertionError(\"only bool and floating types of key_padding_mask are supported\")\n"
    "        }\n"
    "    }\n"
    "    if self.batch_first and is_batched {\n"
    "        if key is value {\n"
    "            if query is key {\n"
    "                query = key = value = query.transpose(1, 0)\n"
    "            } else {\n"
    "                query, key = query.transpose(1, 0), key.transpose(1, 0)\n"
    "                value = key\n"
    "            }\n"
    "        } else {\n"
    "            query, key, value = query.transpose(1, 0), key.transpose(1, 0), value.transpose(1, 0)\n"
    "        }\n"
    "    }\n"
    "    attn_output, attn_output_weights = multi_head_attention_forward(query, key, value, self.embed_dim,\n"
    "        self.num_heads, self.in_proj_weight, self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn,\n"
    "        self.dropout, self.out_proj.weight, self.out_proj.bias, training=False,\n"
    "        key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,\n"
    "        use_separate_proj_weight=not self._qkv_same_embed_dim, q_proj_weight=self.q_proj_weight,\n"
    "        k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,\n"
    "        average_attn_weights=average_attn_weights, _batch_first=self.batch_first and is_batched)\n"
    "    if self.batch_first and is_batched {\n"
    "        return attn_output.transpose(1, 0), attn_output_weights\n"
    "    }\n"
    "    return attn_output, attn_output_weights\n"
    "}\n";

static const char tel_source[] =
    "fn __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,\n"
    "        batch_first=False, norm_first=False, device=None, dtype=None) {\n"
    "    self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,"
        " device=device,\n"
    "        dtype=dtype)\n"
    "    self.linear1 = nn.Linear(d_model, dim_feedforward, device=device, dtype=dtype)\n"
    "    self.dropout = nn.Dropout(dropout)\n"
    "    self.linear2 = nn.Linear(dim_feedforward, d_model, device=device, dtype=dtype)\n"
    "    self.norm_first = norm_first\n"
    "    self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, device=device, dtype=dtype)\n"
    "    self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, device=device, dtype=dtype)\n"
    "    self.dropout1 = nn.Dropout(dropout)\n"
    "    self.dropout2 = nn.Dropout(dropout)\n"
    ACTIVATION_BY_NAME
    "}\n"
    "fn forward(self, src, src_mask=None, src_key_padding_mask=None) {\n"
    "    if src_key_padding_mask is not None {\n"
    "        if src_key_padding_mask.dtype != torch.bool and not torch.is_floating_point(src_key_padding_mask) {\n"
    "            raise AssertionError(\"only bool and floating types of key_padding_mask are supported\")\n"
    "        }\n"
    "    }\n"
    "    fn _sa_block(x, attn_mask, key_padding_mask) {\n"
    "        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,"
        " need_weights=False)[0]\n"
    "        return self.dropout1(x)\n"
    "    }\n"
    "    fn _ff_block(x) {\n"
    "        x = self.linear2(self.dropout(self.activation(self.linear1(x))))\n"
    "        return self.dropout2(x)\n"
    "    }\n"
    "    x = src\n"
    "    if self.norm_first {\n"
    "        x = x + _sa_block(self.norm1(x), src_mask, src_key_padding_mask)\n"
    "        x = x + _ff_block(self.norm2(x))\n"
    "    } else {\n"
    "        x = self.norm1(x + _sa_block(x, src_mask, src_key_padding_mask))\n"
    "        x = self.norm2(x + _ff_block(x))\n"
    "    }\n"
    "    return x\n"
    "}\n";

static const char tdl_source[] =
    "fn __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,\n"
    "        batch_first=False, norm_first=False, device=None, dtype=None) {\n"
    "    self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,"
        " device=device,\n"
    "        dtype=dtype)\n"
    "    self.multihead_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,\n"
    "        device=device, dtype=dtype)\n"
    "    self.linear1 = nn.Linear(d_model, dim_feedforward, device=device, dtype=dtype)\n"
    "    self.dropout = nn.Dropout(dropout)\n"
    "    self.linear2 = nn.Linear(dim_feedforward, d_model, device=device, dtype=dtype)\n"
    "    self.norm_first = norm_first\n"
    "    self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, device=device, dtype=dtype)\n"
    "    self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, device=device, dtype=dtype)\n"
    "    self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps, device=device, dtype=dtype)\n"
    "    self.dropout1 = nn.Dropout(dropout)\n"
    "    self.dropout2 = nn.Dropout(dropout)\n"
    "    self.dropout3 = nn.Dropout(dropout)\n"
    ACTIVATION_BY_NAME
    "}\n"
    "fn forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,\n"
    "        memory_key_padding_mask=None) {\n"
    "    fn _sa_block(x, attn_mask, key_padding_mask) {\n"
    "        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,"
        " need_weights=False)[0]\n"
    "        return self.dropout1(x)\n"
    "    }\n"
    "    fn _mha_block(x, mem, attn_mask, key_padding_mask) {\n"
    "        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,\n"
    "            need_weights=False)[0]\n"
    "        return self.dropout2(x)\n"
    "    }\n"
    "    fn _ff_block(x) {\n"
    "        x = self.linear2(self.dropout(self.activation(self.linear1(x))))\n"
    "        return self.dropout3(x)\n"
    "    }\n"
    "    x = tgt\n"
    "    if self.norm_first {\n"
    "        x = x + _sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask)\n"
    "        x = x + _mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask)\n"
    "        x = x + _ff_block(self.norm3(x))\n"
    "    } else {\n"
    "        x = self.norm1(x + _sa_block(x, tgt_mask, tgt_key_padding_mask))\n"
    "        x = self.norm2(x + _mha_block(x, memory, memory_mask, memory_key_padding_mask))\n"
    "        x = self.norm3(x + _ff_block(x))\n"
    "    }\n"
    "    return x\n"
    "}\n";

typedef struct Composite {
  const char *cls;          // MultiheadAttention
  const char *source;       // its __init__ and forward
  size_t len;
  const char *const *params;  // the parameters PyTorch registers: unset until the program sets them
} Composite;

static const char *const mha_params[] = {"in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight",
                                         "in_proj_bias", "bias_k", "bias_v", NULL};
static const char *const no_params[] = {NULL};

static const Composite composites[] = {
    {"MultiheadAttention", mha_source, sizeof mha_source - 1, mha_params},
    {"TransformerEncoderLayer", tel_source, sizeof tel_source - 1, no_params},
    {"TransformerDecoderLayer", tdl_source, sizeof tdl_source - 1, no_params},
};

static const Composite *composite_of(const char *cls) {
  for (size_t i = 0; i < sizeof composites / sizeof composites[0]; i++)
    if (!strcmp(composites[i].cls, cls)) return &composites[i];
  return NULL;
}

bool is_composite(const TType *m) {
  return m && m->kind == TY_MODULE && m->ctor && m->ctor->kind == AST_CALL && !strncmp(m->module, "torch.nn.", 9) &&
         composite_of(m->module + 9);
}

bool composite_names(const char *cls) { return composite_of(cls) != NULL; }

// Method fname of the source src (a fn at its top level, or one nested in its first fn's body: the
// functional) as a function value named qual, parsed now and placed at at.
static TType *method_of(Sema *sema, const char *path, const char *src, size_t len, const char *fname,
                        const char *qual, Loc at) {
  const SrcFile *f = srcfile_from_string(sema->cx, path, src, len);
  Ast *prog = parse_program(sema->cx, f);
  Ast *def = NULL;
  for (int i = 0; prog && i < prog->list.len && !def; i++) {
    Ast *d = prog->list.data[i];
    if (d->kind == AST_FN && !strcmp(d->name, fname)) def = d;
    for (int j = 0; d->kind == AST_FN && j < d->body.len && !def; j++)
      if (d->body.data[j]->kind == AST_FN && !strcmp(d->body.data[j]->name, fname)) def = d->body.data[j];
  }
  TD_ASSERT(def);
  relocate(def, at);
  def->name = qual;
  def->op = DEF_LOCAL;
  def->ival = 1;  // no captures: it reads its parameters, self's attributes and torch's names
  for (int j = 0; j < def->list.len; j++) {
    Ast *p = def->list.data[j];
    if (p->type->kind == AST_SCALAR_TYPE && !p->type->name) p->type = ast_scalar_type(sema->cx, ANY_TYPE, p->type->loc);
    if (p->rhs && is_poison(check_expr(sema, p->rhs))) return poison(sema);  // literals, and F.relu
  }
  int before = sema->cx->nerrors;
  local_sig(sema, def);
  if (sema->cx->nerrors > before) return poison(sema);
  TType *t = ty_module(sema, "builtins.function");
  t->ctor = def;
  return t;
}

// A node standing for the object m (self).
static Ast *self_node(Sema *sema, TType *m, Loc loc) {
  Ast *n = ast_new(sema->cx, AST_NONE, loc);
  n->ty = m;
  return n;
}

// Method fname of composite c called at e on self m and args.
static TType *call_method(Sema *sema, Ast *e, const Composite *c, TType *m, const char *fname, AstList *args) {
  Loc at = e->kind == AST_CALL ? call_loc(e) : e->loc;
  const char *path = arena_printf(&sema->cx->arena, "<torch.nn.%s>", c->cls);
  const char *qual = arena_printf(&sema->cx->arena, "%s.%s", c->cls, fname);
  TType *f = method_of(sema, path, c->source, c->len, fname, qual, at);
  if (is_poison(f)) return f;
  AstList all = {0};
  vec_push(&sema->cx->arena, &all, self_node(sema, m, e->loc));
  for (int i = 0; i < args->len; i++) vec_push(&sema->cx->arena, &all, args->data[i]);
  return lambda_call(sema, e, f, &all);
}

TType *composite_construct(Sema *sema, Ast *e) {
  const Composite *c = composite_of(e->name);
  if (!c) return NULL;
  if (!check_args(sema, e)) return poison(sema);
  TType *m = ty_module(sema, arena_printf(&sema->cx->arena, "torch.nn.%s", c->cls));
  m->ctor = e;
  int n = 0;
  while (c->params[n]) n++;
  obj_init(sema, m, (const char *const *)c->params, n);
  Ast *init = ast_new(sema->cx, AST_CALL, e->loc);  // __init__'s call, lowered where e makes the object
  init->oploc = call_loc(e);
  init->name = "__init__";
  if (is_poison(call_method(sema, init, c, m, "__init__", &e->list))) return poison(sema);
  Ast *st = ast_new(sema->cx, AST_EXPR, e->loc);
  st->lhs = init;
  vec_push(&sema->cx->arena, &e->unrolled, st);
  return m;
}

TType *composite_apply(Sema *sema, Ast *e, const TType *m, AstList *args) {
  return call_method(sema, e, composite_of(m->module + 9), (TType *)m, "forward", args);
}

// The shape PyTorch gives parameter name of MultiheadAttention object m, from its attributes; false
// when they do not say.
static bool mha_param_shape(Sema *sema, const TType *m, const char *name, int *nd, int64_t *shape) {
  Ast at = {.kind = AST_ATTR, .loc = m->ctor->loc, .oploc = m->ctor->loc};
  int ke = obj_find(m->attrs, "embed_dim");
  const TType *e = ke >= 0 ? obj_read(sema, &at, m, ke) : NULL;
  if (!e || !is_scalar(e)) return false;
  int64_t d = e->ival;
  *nd = 0;
  if (!strcmp(name, "in_proj_weight")) shape[(*nd)++] = 3 * d, shape[(*nd)++] = d;
  else if (!strcmp(name, "in_proj_bias")) shape[(*nd)++] = 3 * d;
  else if (!strcmp(name, "bias_k") || !strcmp(name, "bias_v"))
    shape[(*nd)++] = 1, shape[(*nd)++] = 1, shape[(*nd)++] = d;
  else if (!strcmp(name, "q_proj_weight")) shape[(*nd)++] = d, shape[(*nd)++] = d;
  else {
    int kk = obj_find(m->attrs, name[0] == 'k' ? "kdim" : "vdim");
    const TType *k = kk >= 0 ? obj_read(sema, &at, m, kk) : NULL;
    if (!k || !is_scalar(k)) return false;
    shape[(*nd)++] = d, shape[(*nd)++] = k->ival;
  }
  return true;
}

bool composite_setattr_ok(Sema *sema, const TType *m, const char *name, const Ast *v) {
  if (!is_composite(m)) return true;
  const Composite *c = composite_of(m->module + 9);
  bool param = false;
  for (int i = 0; c->params[i] && !param; i++) param = !strcmp(c->params[i], name);
  if (!param) return true;
  if (!is_tensor(v->ty) && v->ty->kind != TY_NONE) {
    diag_error(sema->cx, v->loc, "cannot assign '%s' as parameter '%s' (torch.nn.Parameter or None expected)",
               py_type_name(v->ty), name);
    return false;
  }
  int nd;
  int64_t shape[TD_MAX_DIMS];
  if (is_tensor(v->ty) && mha_param_shape(sema, m, name, &nd, shape) &&
      !same_shape(nd, shape, v->ty->view.ndim, v->ty->view.shape)) {
    diag_error(sema->cx, v->loc, "size mismatch for %s: copying a param with shape torch.Size(%s), the shape in "
               "current model is torch.Size(%s)", name, shape_str(sema, v->ty->view.ndim, v->ty->view.shape),
               shape_str(sema, nd, shape));
    return false;
  }
  return true;
}

TType *mha_functional(Sema *sema, Ast *e) {
  if (!check_args(sema, e)) return poison(sema);
  TType *f = method_of(sema, "<torch.nn.functional>", mha_source, sizeof mha_source - 1,
                       "multi_head_attention_forward", "multi_head_attention_forward", call_loc(e));
  if (is_poison(f)) return f;
  return lambda_call(sema, e, f, &e->list);
}

TType *object_attr_call(Sema *sema, Ast *e, TType *m) {
  int k = obj_find(m->attrs, e->name);
  if (k < 0) return NULL;
  if (!check_args(sema, e)) return poison(sema);
  Ast *at = ast_new(sema->cx, AST_ATTR, e->loc);
  at->name = e->name;
  at->oploc = e->oploc;
  TType *v = obj_read(sema, at, m, k);
  if (is_poison(v)) return v;
  if (is_container(v)) return container_call(sema, e, v, &e->list);  // layer.mlp(x) of a Sequential
  if (v->kind != TY_MODULE || !v->ctor) {
    diag_error(sema->cx, e->oploc, "'%s' object is not callable", py_type_name(v));
    return poison(sema);
  }
  return module_apply(sema, e, v, &e->list);
}
