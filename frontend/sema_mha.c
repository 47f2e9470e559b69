// frontend/sema_mha.c: the nn modules made of other modules, as pasted model code makes them:
//   nn.MultiheadAttention(embed_dim, num_heads, ...), nn.TransformerEncoderLayer(d_model, nhead, ...)
// and nn.TransformerDecoderLayer, and F.multi_head_attention_forward(...); and a call through an nn
// object of an attribute holding a module (layer.norm1(x)). Each is our own tdsl program below, written
// from PyTorch 1.13's documentation of these classes and its observable results: __init__ sets the
// attributes and submodules the documentation names (made as any nn.Linear or nn.LayerNorm is), forward
// computes in eval mode (dropout is the identity; training=True with dropout_p > 0 is refused as
// F.dropout refuses it). The attention runs on heads viewed as (batch, heads, len, head_dim) in place
// from the projections, which run on the caller's rows as given (batch-first or not): no copies. The
// attention mask and the key padding mask become one additive mask; without the weights the attention
// is F.scaled_dot_product_attention (one fused kernel, the masks computed inside it), else the scaled
// scores, their softmax and the product with the values. Shape and type errors give PyTorch's messages.
// An object is TY_MODULE "torch.nn.MultiheadAttention" (ctor its construction call) with attributes
// (sema_object.c): its parameters start unset, to be set by the program as an nn.Linear's are
// (`mha.in_proj_weight = w`, checked as load_state_dict checks them), the unused ones are set to None
// by __init__.
// Invariants: each __init__ and forward is a fn inside a function (sema_lambda.c's DEF_LOCAL, its
// parameters untyped), parsed anew from the source here for each construction and each call and
// placed at that call (relocate), so that every message, Python's argument errors and the checks'
// alike, is located at the user's line; its name is the method's ("MultiheadAttention.forward").
#include "frontend/sema_internal.h"

#include <string.h>

// F.multi_head_attention_forward, nested in MultiheadAttention.forward. _batch_first (ours): query, key
// and value are (batch, len, E), else (len, batch, E); the heads (bsz, num_heads, len, head_dim) are
// views of the projections either way.
#define MHA_FUNCTIONAL \
    "    fn multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight," \
        " in_proj_bias,\n" \
    "            bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training=True,\n" \
    "            key_padding_mask=None, need_weights=True, attn_mask=None, use_separate_proj_weight=False,\n" \
    "            q_proj_weight=None, k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None,\n" \
    "            average_attn_weights=True, _batch_first=False) {\n" \
    "        nd = query.dim()\n" \
    "        if nd != 2 and nd != 3 {\n" \
    "            raise AssertionError(f\"query should be unbatched 2D or batched 3D tensor but received {nd}-D" \
        " query tensor\")\n" \
    "        }\n" \
    "        which = \"For batched (3-D) `query`\" if nd == 3 else \"For unbatched (2-D) `query`\"\n" \
    "        assert key.dim() == nd and value.dim() == nd, f\"{which}, expected `key` and `value` to be {nd}-D" \
        " but found {key.dim()}-D and {value.dim()}-D tensors respectively\"\n" \
    "        kpm, mask = key_padding_mask, attn_mask\n" \
    "        if kpm is not None {\n" \
    "            assert kpm.dim() == nd - 1, f\"{which}, expected `key_padding_mask` to be `None` or {nd - 1}-D" \
        " but found {kpm.dim()}-D tensor instead\"\n" \
    "            if kpm.dtype != torch.bool and not kpm.is_floating_point() {\n" \
    "                raise AssertionError(\"only bool and floating types of key_padding_mask are supported\")\n" \
    "            }\n" \
    "        }\n" \
    "        if mask is not None {\n" \
    "            assert mask.dim() in (2, 3), f\"{which}, expected `attn_mask` to be `None`, 2-D or 3-D but found" \
        " {mask.dim()}-D tensor instead\"\n" \
    "        }\n" \
    "        fused_qkv = query is key and key is value\n" \
    "        fused_kv = key is value\n" \
    "        seq = 1 if _batch_first else 0\n" \
    "        if nd == 2 {\n" \
    "            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)\n" \
    "            kpm = None if kpm is None else kpm.unsqueeze(0)\n" \
    "        }\n" \
    "        L, bsz, E, S = query.shape[seq], query.shape[1 - seq], query.shape[2], key.shape[seq]\n" \
    "        assert E == embed_dim_to_check, f\"was expecting embedding dimension of {embed_dim_to_check}, but" \
        " got {E}\"\n" \
    "        hd = E // num_heads\n" \
    "        assert hd * num_heads == E, f\"embed_dim {E} not divisible by num_heads {num_heads}\"\n" \
    "        ks = key.transpose(0, 1).shape if _batch_first else key.shape\n" \
    "        vs = value.transpose(0, 1).shape if _batch_first else value.shape\n" \
    "        if use_separate_proj_weight {\n" \
    "            assert ks[:2] == vs[:2], f\"key's sequence and batch dims {ks[:2]} do not match value's" \
        " {vs[:2]}\"\n" \
    "        } else {\n" \
    "            assert ks == vs, f\"key shape {ks} does not match value shape {vs}\"\n" \
    "        }\n" \
    "        bq, bk, bv = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)\n" \
    "        if use_separate_proj_weight {\n" \
    "            fn weight(w, c, what, want) {\n" \
    "                assert w is not None, f\"use_separate_proj_weight is True but {c}_proj_weight is None\"\n" \
    "                assert w.shape == want, f\"expecting {what} weights shape of {want}, but got {w.shape}\"\n" \
    "                return w\n" \
    "            }\n" \
    "            ws = (weight(q_proj_weight, \"q\", \"query\", (E, E)), weight(k_proj_weight, \"k\", \"key\", (E," \
        " key.size(-1))),\n" \
    "                  weight(v_proj_weight, \"v\", \"value\", (E, value.size(-1))))\n" \
    "            assert bq is None or bq.shape == (E,), f\"expecting query bias shape of {(E,)}, but got" \
        " {bq.shape}\"\n" \
    "        } else {\n" \
    "            assert in_proj_weight is not None, \"use_separate_proj_weight is False but in_proj_weight is" \
        " None\"\n" \
    "            ws = None\n" \
    "        }\n" \
    "        # one GEMM for the rows projected together: all three (self-attention), or key and value\n" \
    "        if ws is None and fused_qkv {\n" \
    "            q, k, v = F.linear(query, in_proj_weight, in_proj_bias).chunk(3, dim=-1)\n" \
    "        } elif ws is None and fused_kv {\n" \
    "            q = F.linear(query, in_proj_weight[:E], bq)\n" \
    "            k, v = F.linear(key, in_proj_weight[E:], None if bk is None else in_proj_bias[E:]).chunk(2," \
        " dim=-1)\n" \
    "        } else {\n" \
    "            wq, wk, wv = in_proj_weight.chunk(3) if ws is None else ws\n" \
    "            q, k, v = F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)\n" \
    "        }\n" \
    "        fn heads(t) {\n" \
    "            t = t.view(t.shape[0], t.shape[1], num_heads, hd)\n" \
    "            return t.permute(0, 2, 1, 3) if _batch_first else t.permute(1, 2, 0, 3)\n" \
    "        }\n" \
    "        if mask is not None {\n" \
    "            if mask.dtype == torch.uint8 {\n" \
    "                mask = mask.to(torch.bool)\n" \
    "            }\n" \
    "            assert mask.is_floating_point() or mask.dtype == torch.bool, f\"Only float, byte, and bool types" \
        " are supported for attn_mask, not {mask.dtype}\"\n" \
    "            want = (L, S) if mask.dim() == 2 else (bsz * num_heads, L, S)\n" \
    "            if nd == 2 and mask.dim() == 3 {\n" \
    "                assert mask.shape == want, f\"Expected `attn_mask` shape to be {want} but got {mask.shape}\"\n" \
    "            }\n" \
    "            if mask.shape != want {\n" \
    "                raise RuntimeError(f\"The shape of the {mask.dim()}D attn_mask is {mask.shape}, but should be" \
        " {want}.\")\n" \
    "            }\n" \
    "            mask = mask.view(1, 1, L, S) if mask.dim() == 2 else mask.view(bsz, num_heads, L, S)\n" \
    "        }\n" \
    "        # the keys and values: projected or given (static_k, static_v), then the extra columns\n" \
    "        fn given(t, name) {\n" \
    "            assert t.size(0) == bsz * num_heads, f\"expecting {name}.size(0) of {bsz * num_heads}, but got" \
        " {t.size(0)}\"\n" \
    "            assert t.size(2) == hd, f\"expecting {name}.size(2) of {hd}, but got {t.size(2)}\"\n" \
    "            return t.view(bsz, num_heads, t.size(1), hd)\n" \
    "        }\n" \
    "        q = heads(q)\n" \
    "        k = heads(k) if static_k is None else given(static_k, \"static_k\")\n" \
    "        v = heads(v) if static_v is None else given(static_v, \"static_v\")\n" \
    "        extra = []\n" \
    "        if bias_k is not None or bias_v is not None {\n" \
    "            assert bias_k is not None and bias_v is not None\n" \
    "            assert static_k is None, \"bias cannot be added to static key.\"\n" \
    "            assert static_v is None, \"bias cannot be added to static value.\"\n" \
    "            extra = [(bias_k, bias_v)]\n" \
    "        }\n" \
    "        if add_zero_attn {\n" \
    "            zero = torch.zeros(1, 1, E, dtype=q.dtype)\n" \
    "            extra = extra + [(zero, zero)]\n" \
    "        }\n" \
    "        for ek, ev in extra {\n" \
    "            k = torch.cat([k, ek.view(1, num_heads, 1, hd).expand(bsz, num_heads, 1, hd)], dim=2)\n" \
    "            v = torch.cat([v, ev.view(1, num_heads, 1, hd).expand(bsz, num_heads, 1, hd)], dim=2)\n" \
    "        }\n" \
    "        # the extra key columns are never masked\n" \
    "        n = len(extra)\n" \
    "        S = k.size(2)\n" \
    "        if mask is not None and n > 0 {\n" \
    "            mask = F.pad(mask, (0, n))\n" \
    "        }\n" \
    "        if kpm is not None {\n" \
    "            kpm = F.pad(kpm, (0, n)) if n > 0 else kpm\n" \
    "            assert kpm.shape == (bsz, S), f\"expecting key_padding_mask shape of {(bsz, S)}, but got" \
        " {kpm.shape}\"\n" \
    "            kpm = kpm.view(bsz, 1, 1, S)\n" \
    "            # PyTorch 1.13 next to an attn_mask: a float key padding mask hides where nonzero by a bool\n" \
    "            # attn_mask, and is left out by a float one\n" \
    "            if mask is not None and kpm.dtype != torch.bool {\n" \
    "                kpm = kpm != 0 if mask.dtype == torch.bool else None\n" \
    "            }\n" \
    "        }\n" \
    "        fn additive(m) {\n" \
    "            return torch.where(m, float(\"-inf\"), 0.0).to(q.dtype) if m.dtype == torch.bool else m\n" \
    "        }\n" \
    "        if kpm is not None {\n" \
    "            mask = additive(kpm) if mask is None else additive(mask) + additive(kpm)\n" \
    "        } elif mask is not None {\n" \
    "            mask = additive(mask)\n" \
    "        }\n" \
    "        p = dropout_p if training else 0.0\n" \
    "        if need_weights or p > 0.0 {\n" \
    "            scores = (q * (1.0 / math.sqrt(hd))) @ k.transpose(-2, -1)\n" \
    "            weights = F.softmax(scores if mask is None else scores + mask, dim=-1)\n" \
    "            out = (F.dropout(weights, p=p) if p > 0.0 else weights) @ v\n" \
    "        } else {\n" \
    "            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n" \
    "        }\n" \
    "        out = out.permute(0, 2, 1, 3) if _batch_first else out.permute(2, 0, 1, 3)\n" \
    "        out = F.linear(out.reshape(out.shape[0], out.shape[1], E), out_proj_weight, out_proj_bias)\n" \
    "        out = out.squeeze(1) if nd == 2 else out\n" \
    "        if not need_weights {\n" \
    "            return out, None\n" \
    "        }\n" \
    "        weights = weights.mean(dim=1) if average_attn_weights else weights\n" \
    "        return out, (weights.squeeze(0) if nd == 2 else weights)\n" \
    "    }\n"

static const char mha_source[] =
    "fn __init__(self, embed_dim, num_heads, dropout=0., bias=True, add_bias_kv=False, add_zero_attn=False,"
        " kdim=None,\n"
    "        vdim=None, batch_first=False, device=None, dtype=None) {\n"
    "    assert embed_dim % num_heads == 0, \"embed_dim must be divisible by num_heads\"\n"
    "    self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads\n"
    "    self.kdim = embed_dim if kdim is None else kdim\n"
    "    self.vdim = embed_dim if vdim is None else vdim\n"
    "    self._qkv_same_embed_dim = (self.kdim, self.vdim) == (embed_dim, embed_dim)\n"
    "    self.dropout, self.batch_first, self.add_zero_attn = dropout, batch_first, add_zero_attn\n"
    "    # the parameters not used by this configuration are None; the others the program sets\n"
    "    if self._qkv_same_embed_dim {\n"
    "        self.q_proj_weight, self.k_proj_weight, self.v_proj_weight = None, None, None\n"
    "    } else {\n"
    "        self.in_proj_weight = None\n"
    "    }\n"
    "    if not bias {\n"
    "        self.in_proj_bias = None\n"
    "    }\n"
    "    if not add_bias_kv {\n"
    "        self.bias_k, self.bias_v = None, None\n"
    "    }\n"
    "    self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)\n"
    "}\n"
    "fn forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,\n"
    "        average_attn_weights=True) {\n"
    MHA_FUNCTIONAL
    "    return multi_head_attention_forward(query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,\n"
    "        self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight,\n"
    "        self.out_proj.bias, training=False, key_padding_mask=key_padding_mask, need_weights=need_weights,\n"
    "        attn_mask=attn_mask, use_separate_proj_weight=not self._qkv_same_embed_dim,\n"
    "        q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,\n"
    "        average_attn_weights=average_attn_weights, _batch_first=self.batch_first and query.dim() == 3)\n"
    "}\n";

// The encoder and decoder layers: the submodules the documentation names (their parameters set by the
// program), an activation by name or any callable, and forward as a chain of residual blocks: each
// block adds to its input, after the block's norm (norm_first) or normed after the sum.
#define LAYER_INIT(ATTNS, NORMS) \
    "fn __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,\n" \
    "        batch_first=False, norm_first=False, device=None, dtype=None) {\n" \
    "    fn attention() {\n" \
    "        return nn.MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, device=device,\n" \
    "            dtype=dtype)\n" \
    "    }\n" \
    "    fn norm() {\n" \
    "        return nn.LayerNorm(d_model, eps=layer_norm_eps, device=device, dtype=dtype)\n" \
    "    }\n" \
    ATTNS \
    "    self.linear1 = nn.Linear(d_model, dim_feedforward, device=device, dtype=dtype)\n" \
    "    self.dropout = nn.Dropout(dropout)\n" \
    "    self.linear2 = nn.Linear(dim_feedforward, d_model, device=device, dtype=dtype)\n" \
    NORMS \
    "    self.norm_first = norm_first\n" \
    "    if isinstance(activation, str) {\n" \
    "        if activation != \"relu\" and activation != \"gelu\" {\n" \
    "            raise RuntimeError(f\"activation should be relu/gelu, not {activation}\")\n" \
    "        }\n" \
    "        activation = F.relu if activation == \"relu\" else F.gelu\n" \
    "    }\n" \
    "    self.activation = activation\n" \
    "}\n"

// residual(x, norm, block): one residual step; attend(m, x, kv, mask, kpm): m's output alone
#define LAYER_STEPS \
    "    fn residual(x, norm, block) {\n" \
    "        return x + block(norm(x)) if self.norm_first else norm(x + block(x))\n" \
    "    }\n" \
    "    fn attend(m, x, kv, mask, kpm) {\n" \
    "        return m(x, kv, kv, attn_mask=mask, key_padding_mask=kpm, need_weights=False)[0]\n" \
    "    }\n" \
    "    fn feed_forward(x) {\n" \
    "        return self.linear2(self.activation(self.linear1(x)))\n" \
    "    }\n"

static const char tel_source[] =
    LAYER_INIT("    self.self_attn = attention()\n",
               "    self.norm1, self.norm2 = norm(), norm()\n"
               "    self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)\n")
    "fn forward(self, src, src_mask=None, src_key_padding_mask=None) {\n"
    LAYER_STEPS
    "    x = residual(src, self.norm1, lambda h: attend(self.self_attn, h, h, src_mask, src_key_padding_mask))\n"
    "    return residual(x, self.norm2, feed_forward)\n"
    "}\n";

static const char tdl_source[] =
    LAYER_INIT("    self.self_attn, self.multihead_attn = attention(), attention()\n",
               "    self.norm1, self.norm2, self.norm3 = norm(), norm(), norm()\n"
               "    self.dropout1, self.dropout2, self.dropout3 = nn.Dropout(dropout), nn.Dropout(dropout),"
                   " nn.Dropout(dropout)\n")
    "fn forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,\n"
    "        memory_key_padding_mask=None) {\n"
    LAYER_STEPS
    "    x = residual(tgt, self.norm1, lambda h: attend(self.self_attn, h, h, tgt_mask, tgt_key_padding_mask))\n"
    "    x = residual(x, self.norm2, lambda h: attend(self.multihead_attn, h, memory, memory_mask,\n"
    "        memory_key_padding_mask))\n"
    "    return residual(x, self.norm3, feed_forward)\n"
    "}\n";

// nn.TransformerEncoder and nn.TransformerDecoder: num_layers deep copies of the layer given (each its
// own parameters, set by the program: `enc.layers[1].linear1.weight = w`), applied in turn, then the
// optional norm.
static const char te_source[] =
    "fn __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True) {\n"
    "    self.layers = nn.ModuleList([copy.deepcopy(encoder_layer) for i in range(num_layers)])\n"
    "    self.num_layers, self.norm = num_layers, norm\n"
    "    self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check\n"
    "}\n"
    "fn forward(self, src, mask=None, src_key_padding_mask=None) {\n"
    "    kpm = src_key_padding_mask\n"
    "    if kpm is not None and kpm.dtype != torch.bool and not torch.is_floating_point(kpm) {\n"
    "        raise AssertionError(\"only bool and floating types of key_padding_mask are supported\")\n"
    "    }\n"
    "    output = src\n"
    "    for mod in self.layers {\n"
    "        output = mod(output, src_mask=mask, src_key_padding_mask=kpm)\n"
    "    }\n"
    "    return output if self.norm is None else self.norm(output)\n"
    "}\n";

static const char td_source[] =
    "fn __init__(self, decoder_layer, num_layers, norm=None) {\n"
    "    self.layers = nn.ModuleList([copy.deepcopy(decoder_layer) for i in range(num_layers)])\n"
    "    self.num_layers, self.norm = num_layers, norm\n"
    "}\n"
    "fn forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,\n"
    "        memory_key_padding_mask=None) {\n"
    "    output = tgt\n"
    "    for mod in self.layers {\n"
    "        output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,\n"
    "            tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask)\n"
    "    }\n"
    "    return output if self.norm is None else self.norm(output)\n"
    "}\n";

// nn.ChannelShuffle(groups), and F.channel_shuffle(input, groups) nested in its forward: the channels
// viewed as (groups, C / groups), transposed, flattened back.
static const char cs_source[] =
    "fn __init__(self, groups) {\n"
    "    self.groups = groups\n"
    "}\n"
    "fn forward(self, input) {\n"
    "    fn channel_shuffle(input, groups) {\n"
    "        if input.dim() <= 2 {\n"
    "            raise RuntimeError(f\"channel_shuffle expects input with > 2 dims, but got input with sizes\"\n"
    "                f\" {list(input.shape)}\")\n"
    "        }\n"
    "        if groups <= 0 {\n"
    "            raise RuntimeError(f\"Number of groups to divide channels in must be positive. Value of groups:\"\n"
    "                f\"{groups}\")\n"
    "        }\n"
    "        s = input.shape\n"
    "        if s[1] % groups != 0 {\n"
    "            raise RuntimeError(f\"Number of channels must be divisible by groups. Got {s[1]} channels and\"\n"
    "                f\" {groups} groups.\")\n"
    "        }\n"
    "        return input.reshape((s[0], groups, s[1] // groups) + tuple(s[2:])).transpose(1, 2).reshape(s)\n"
    "    }\n"
    "    return channel_shuffle(input, self.groups)\n"
    "}\n";

// nn.Transformer: an encoder and a decoder of such layers, each stack normed (or the custom ones given).
static const char tr_source[] =
    "fn __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,\n"
    "        dropout=0.1, activation=F.relu, custom_encoder=None, custom_decoder=None, layer_norm_eps=1e-5,\n"
    "        batch_first=False, norm_first=False, device=None, dtype=None) {\n"
    "    fn norm() {\n"
    "        return nn.LayerNorm(d_model, eps=layer_norm_eps, device=device, dtype=dtype)\n"
    "    }\n"
    "    if custom_encoder is not None {\n"
    "        self.encoder = custom_encoder\n"
    "    } else {\n"
    "        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout,\n"
    "            activation, layer_norm_eps, batch_first, norm_first, device=device, dtype=dtype), num_encoder_layers,\n"
    "            norm())\n"
    "    }\n"
    "    if custom_decoder is not None {\n"
    "        self.decoder = custom_decoder\n"
    "    } else {\n"
    "        self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout,\n"
    "            activation, layer_norm_eps, batch_first, norm_first, device=device, dtype=dtype), num_decoder_layers,\n"
    "            norm())\n"
    "    }\n"
    "    self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first\n"
    "}\n"
    "fn forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,\n"
    "        tgt_key_padding_mask=None, memory_key_padding_mask=None) {\n"
    "    is_batched = src.dim() == 3\n"
    "    if is_batched and src.size(0 if self.batch_first else 1) != tgt.size(0 if self.batch_first else 1) {\n"
    "        raise RuntimeError(\"the batch number of src and tgt must be equal\")\n"
    "    }\n"
    "    if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model {\n"
    "        raise RuntimeError(\"the feature number of src and tgt must be equal to d_model\")\n"
    "    }\n"
    "    memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask)\n"
    "    return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,\n"
    "        tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask)\n"
    "}\n"
    "fn generate_square_subsequent_mask(sz, device=\"cpu\") {\n"
    "    return torch.triu(torch.full((sz, sz), float(\"-inf\")), diagonal=1)\n"
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
    {"TransformerEncoder", te_source, sizeof te_source - 1, no_params},
    {"TransformerDecoder", td_source, sizeof td_source - 1, no_params},
    {"ChannelShuffle", cs_source, sizeof cs_source - 1, no_params},
    {"Transformer", tr_source, sizeof tr_source - 1, no_params},
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
  return def_value(sema, def);
}

// Method fname of composite c called at e on self m and args.
static TType *call_method(Sema *sema, Ast *e, const Composite *c, TType *m, const char *fname, AstList *args) {
  Loc at = e->kind == AST_CALL ? call_loc(e) : e->loc;
  const char *path = arena_printf(&sema->cx->arena, "<torch.nn.%s>", c->cls);
  const char *qual = arena_printf(&sema->cx->arena, "%s.%s", c->cls, fname);
  TType *f = method_of(sema, path, c->source, c->len, fname, qual, at);
  if (is_poison(f)) return f;
  AstList all = {0};
  vec_push(&sema->cx->arena, &all, value_node(sema, m, e->loc));
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

TType *channel_shuffle_functional(Sema *sema, Ast *e) {
  if (!check_args(sema, e)) return poison(sema);
  TType *f = method_of(sema, "<torch.nn.functional>", cs_source, sizeof cs_source - 1, "channel_shuffle",
                       "channel_shuffle", call_loc(e));
  if (is_poison(f)) return f;
  return lambda_call(sema, e, f, &e->list);
}

// Whether composite c's source has a static method fname (a fn at its top level taking no self).
static bool static_method_of(const Composite *c, const char *fname) {
  size_t n = strlen(fname);
  for (const char *p = strstr(c->source, "fn "); p; p = strstr(p + 3, "fn "))
    if ((p == c->source || p[-1] == '\n') && !strncmp(p + 3, fname, n) && p[3 + n] == '(' &&
        strncmp(p + 4 + n, "self", 4))
      return true;
  return false;
}

// Cls.name(args) (nn.Transformer.generate_square_subsequent_mask(sz)) or obj.name(args) of a static method
// of composite class cls at call e; NULL when it has none.
TType *composite_static_call(Sema *sema, Ast *e, const char *cls) {
  const Composite *c = composite_of(cls);
  if (!c || !static_method_of(c, e->name)) return NULL;
  if (!check_args(sema, e)) return poison(sema);
  TType *f = method_of(sema, arena_printf(&sema->cx->arena, "<torch.nn.%s>", c->cls), c->source, c->len, e->name,
                       arena_printf(&sema->cx->arena, "%s.%s", c->cls, e->name), call_loc(e));
  if (is_poison(f)) return f;
  return lambda_call(sema, e, f, &e->list);
}

TType *object_attr_call(Sema *sema, Ast *e, TType *m) {
  int k = obj_find(m->attrs, e->name);
  if (k < 0 && is_composite(m)) return composite_static_call(sema, e, m->module + 9);
  if (k < 0) return NULL;
  if (!check_args(sema, e)) return poison(sema);
  return call_attr_value(sema, e, obj_read(sema, attr_of_call(sema, e), m, k));  // layer.mlp(x) of a Sequential too
}
