"""bench/models/whole.py — the whole-model table's models as torch.nn.Modules.

GPT-2 small (nanoGPT's model.py GPT with GPT-2's tanh GELU and the full logits, as
Hugging Face's GPT2LMHeadModel returns them), a LLaMA decoder layer at TinyLlama-1.1B's
size (transformers' LlamaDecoderLayer), ViT-B/16 (timm's VisionTransformer), ResNet-50
(torchvision's resnet50), a Mamba residual block (mamba-minimal's ResidualBlock) and
ConvNeXt-T's stage-2 -> 3 transition (facebookresearch/ConvNeXt's LayerNorm and Block), each
written from its public definition (none of those packages is installed), in eval mode,
for PyTorch 1.13: the blocks that bench/models/reference.py already has (nanoGPT's Block,
LLaMA's decoder layer and RMSNorm, timm's ViT Block, ConvNeXt's LayerNorm and Block) are its
classes, the rest is here. bench/run.py times each one as eager PyTorch and checks the .tdsl
function of the same name (bench/models/*.tdsl) against it, both sides computing with the
same arrays.

WHOLE lists each model's .tdsl parameters in order. A parameter comes from the forward
pass's inputs ("input"; `dtype` i64 for token ids), from a state_dict entry (a key), or
from several entries stacked on new leading dims (a list of keys, nested: the .tdsl
programs stack a model's layers, and ResNet's BatchNorm parameters as rows
weight, bias, running_mean, running_var). This module imports torch only inside
functions: the harness reads WHOLE without it.
"""
import reference

GPT2_LAYERS, GPT2_C, GPT2_VOCAB, GPT2_CTX = 12, 768, 50257, 1024


def _gpt2_params(b, t):
    L, C = GPT2_LAYERS, GPT2_C
    h = lambda k: ["transformer.h.%d.%s" % (i, k) for i in range(L)]  # noqa: E731
    return [("idx", "input", (b, t), "i64"),
            ("wte", "transformer.wte.weight", (GPT2_VOCAB, C)), ("wpe", "transformer.wpe.weight", (GPT2_CTX, C)),
            ("ln_1_w", h("ln_1.weight"), (L, C)), ("ln_1_b", h("ln_1.bias"), (L, C)),
            ("attn_w", h("attn.c_attn.weight"), (L, 3 * C, C)), ("attn_b", h("attn.c_attn.bias"), (L, 3 * C)),
            ("attn_proj_w", h("attn.c_proj.weight"), (L, C, C)), ("attn_proj_b", h("attn.c_proj.bias"), (L, C)),
            ("ln_2_w", h("ln_2.weight"), (L, C)), ("ln_2_b", h("ln_2.bias"), (L, C)),
            ("fc_w", h("mlp.c_fc.weight"), (L, 4 * C, C)), ("fc_b", h("mlp.c_fc.bias"), (L, 4 * C)),
            ("mlp_proj_w", h("mlp.c_proj.weight"), (L, C, 4 * C)), ("mlp_proj_b", h("mlp.c_proj.bias"), (L, C)),
            ("ln_f_w", "transformer.ln_f.weight", (C,)), ("ln_f_b", "transformer.ln_f.bias", (C,))]


def _gpt2_flops(b, t):  # the matmuls: 12 blocks, attention's two products, the logits
    C, tok = GPT2_C, b * t
    return GPT2_LAYERS * (2 * tok * C * 12 * C + 2 * 2 * b * t * t * C) + 2 * tok * C * GPT2_VOCAB


def _gpt2(b, t, reps):
    return dict(name="gpt2_%d_%d" % (b, t), file="gpt2.tdsl", fn="gpt2", dims={"B": b, "T": t}, build=("gpt2",),
                what="GPT-2 small (124M), the whole forward with the logits; B=%d, T=%d" % (b, t),
                flops=_gpt2_flops(b, t), reps=reps, params=_gpt2_params(b, t))


LL = dict(dim=2048, nh=32, nkv=4, ff=5632, b=1, t=256)
VIT_DEPTH, VIT_C = 12, 768


def _llama_params():
    d, hd, nkv, ff, b, t = LL["dim"], LL["dim"] // LL["nh"], LL["nkv"], LL["ff"], LL["b"], LL["t"]
    return [("x", "input", (b, t, d)), ("mask", "input", (b, 1, t, t)),
            ("cos", "input", (b, t, hd)), ("sin", "input", (b, t, hd)),
            ("input_layernorm_w", "input_layernorm.weight", (d,)),
            ("q_w", "self_attn.q_proj.weight", (d, d)), ("k_w", "self_attn.k_proj.weight", (nkv * hd, d)),
            ("v_w", "self_attn.v_proj.weight", (nkv * hd, d)), ("o_w", "self_attn.o_proj.weight", (d, d)),
            ("post_attention_layernorm_w", "post_attention_layernorm.weight", (d,)),
            ("gate_w", "mlp.gate_proj.weight", (ff, d)), ("up_w", "mlp.up_proj.weight", (ff, d)),
            ("down_w", "mlp.down_proj.weight", (d, ff))]


def _llama_flops():
    d, hd, nh, nkv, ff, tok = LL["dim"], LL["dim"] // LL["nh"], LL["nh"], LL["nkv"], LL["ff"], LL["b"] * LL["t"]
    return 2 * tok * d * (2 * d + 2 * nkv * hd + 3 * ff) + 2 * 2 * LL["b"] * nh * LL["t"] ** 2 * hd


def _vit_params():
    L, C = VIT_DEPTH, VIT_C
    h = lambda k: ["blocks.%d.%s" % (i, k) for i in range(L)]  # noqa: E731
    return [("x", "input", (1, 3, 224, 224)), ("patch_w", "patch_embed.proj.weight", (C, 3, 16, 16)),
            ("patch_b", "patch_embed.proj.bias", (C,)), ("cls_token", "cls_token", (1, 1, C)),
            ("pos_embed", "pos_embed", (1, 197, C)),
            ("norm1_w", h("norm1.weight"), (L, C)), ("norm1_b", h("norm1.bias"), (L, C)),
            ("qkv_w", h("attn.qkv.weight"), (L, 3 * C, C)), ("qkv_b", h("attn.qkv.bias"), (L, 3 * C)),
            ("proj_w", h("attn.proj.weight"), (L, C, C)), ("proj_b", h("attn.proj.bias"), (L, C)),
            ("norm2_w", h("norm2.weight"), (L, C)), ("norm2_b", h("norm2.bias"), (L, C)),
            ("fc1_w", h("mlp.fc1.weight"), (L, 4 * C, C)), ("fc1_b", h("mlp.fc1.bias"), (L, 4 * C)),
            ("fc2_w", h("mlp.fc2.weight"), (L, C, 4 * C)), ("fc2_b", h("mlp.fc2.bias"), (L, C)),
            ("norm_w", "norm.weight", (C,)), ("norm_b", "norm.bias", (C,)),
            ("head_w", "head.weight", (1000, C)), ("head_b", "head.bias", (1000,))]


def _vit_flops():
    C, n = VIT_C, 197
    return 2 * 196 * C * 3 * 256 + VIT_DEPTH * (2 * n * C * 12 * C + 2 * 2 * n * n * C) + 2 * C * 1000


RESNET_STAGES = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))  # width, blocks, stride


def _bn(prefix):
    return [prefix + ".weight", prefix + ".bias", prefix + ".running_mean", prefix + ".running_var"]


def _resnet_params():
    ps = [("x", "input", (1, 3, 224, 224)), ("conv1_w", "conv1.weight", (64, 3, 7, 7)), ("bn1", _bn("bn1"), (4, 64))]
    cin = 64
    for s, (wid, nblk, _) in enumerate(RESNET_STAGES, 1):
        c4, f = 4 * wid, "layer%d.0." % s
        ps += [("l%d_conv1" % s, f + "conv1.weight", (wid, cin, 1, 1)), ("l%d_bn1" % s, _bn(f + "bn1"), (4, wid)),
               ("l%d_conv2" % s, f + "conv2.weight", (wid, wid, 3, 3)), ("l%d_bn2" % s, _bn(f + "bn2"), (4, wid)),
               ("l%d_conv3" % s, f + "conv3.weight", (c4, wid, 1, 1)), ("l%d_bn3" % s, _bn(f + "bn3"), (4, c4)),
               ("l%d_down" % s, f + "downsample.0.weight", (c4, cin, 1, 1)),
               ("l%d_down_bn" % s, _bn(f + "downsample.1"), (4, c4))]
        rest = ["layer%d.%d." % (s, i) for i in range(1, nblk)]
        n = nblk - 1
        ps += [("l%dr_conv1" % s, [r + "conv1.weight" for r in rest], (n, wid, c4, 1, 1)),
               ("l%dr_bn1" % s, [_bn(r + "bn1") for r in rest], (n, 4, wid)),
               ("l%dr_conv2" % s, [r + "conv2.weight" for r in rest], (n, wid, wid, 3, 3)),
               ("l%dr_bn2" % s, [_bn(r + "bn2") for r in rest], (n, 4, wid)),
               ("l%dr_conv3" % s, [r + "conv3.weight" for r in rest], (n, c4, wid, 1, 1)),
               ("l%dr_bn3" % s, [_bn(r + "bn3") for r in rest], (n, 4, c4))]
        cin = c4
    return ps + [("fc_w", "fc.weight", (1000, 2048)), ("fc_b", "fc.bias", (1000,))]


def _resnet_flops():
    f, hw, cin = 2 * 112 * 112 * 64 * 3 * 49, 56, 64
    for wid, nblk, stride in RESNET_STAGES:
        for i in range(nblk):
            s = stride if i == 0 else 1
            ho = hw // s
            f += 2 * hw * hw * wid * cin + 2 * ho * ho * wid * wid * 9 + 2 * ho * ho * 4 * wid * wid
            if i == 0:
                f += 2 * ho * ho * 4 * wid * cin
            hw, cin = ho, 4 * wid
    return f + 2 * 2048 * 1000


MB = dict(d_model=768, d_inner=1536, d_state=16, dt_rank=48, d_conv=4, l=128)


def _mamba_params():
    dm, di, n, r, k, l = MB["d_model"], MB["d_inner"], MB["d_state"], MB["dt_rank"], MB["d_conv"], MB["l"]
    return [("x", "input", (1, l, dm)), ("norm_w", "norm.weight", (dm,)),
            ("in_proj_w", "mixer.in_proj.weight", (2 * di, dm)),
            ("conv1d_w", "mixer.conv1d.weight", (di, 1, k)), ("conv1d_b", "mixer.conv1d.bias", (di,)),
            ("x_proj_w", "mixer.x_proj.weight", (r + 2 * n, di)),
            ("dt_proj_w", "mixer.dt_proj.weight", (di, r)), ("dt_proj_b", "mixer.dt_proj.bias", (di,)),
            ("A_log", "mixer.A_log", (di, n)), ("D", "mixer.D", (di,)),
            ("out_proj_w", "mixer.out_proj.weight", (dm, di))]


def _mamba_flops():
    dm, di, n, r, l = MB["d_model"], MB["d_inner"], MB["d_state"], MB["dt_rank"], MB["l"]
    return 2 * l * (dm * 2 * di + di * (r + 2 * n) + r * di + di * dm) + 2 * l * di * n


CN = dict(n=2, c0=192, c=384, h=14, w=14)


def _convnext_params():
    n, c0, c, h, w = CN["n"], CN["c0"], CN["c"], CN["h"], CN["w"]
    return [("x", "input", (n, c0, 2 * h, 2 * w)),
            ("ds_norm_w", "downsample.0.weight", (c0,)), ("ds_norm_b", "downsample.0.bias", (c0,)),
            ("ds_conv_w", "downsample.1.weight", (c, c0, 2, 2)), ("ds_conv_b", "downsample.1.bias", (c,)),
            ("dw_w", "block.dwconv.weight", (c, 1, 7, 7)), ("dw_b", "block.dwconv.bias", (c,)),
            ("norm_w", "block.norm.weight", (c,)), ("norm_b", "block.norm.bias", (c,)),
            ("pw1_w", "block.pwconv1.weight", (4 * c, c)), ("pw1_b", "block.pwconv1.bias", (4 * c,)),
            ("pw2_w", "block.pwconv2.weight", (c, 4 * c)), ("pw2_b", "block.pwconv2.bias", (c,)),
            ("gamma", "block.gamma", (c,))]


def _convnext_flops():  # the 2x2 stride-2 conv, the depthwise 7x7, the two pointwise linears
    n, c0, c, hw = CN["n"], CN["c0"], CN["c"], CN["h"] * CN["w"]
    return 2 * n * hw * (c * c0 * 4 + c * 49 + 2 * c * 4 * c)


WHOLE = [
    _gpt2(1, 64, 5), _gpt2(1, 512, 3), _gpt2(8, 128, 3),
    dict(name="llama_decoder", file="llama_decoder.tdsl", fn="llama_decoder", build=("llama",),
         what="LLaMA decoder layer, TinyLlama-1.1B size: RMSNorm, RoPE, GQA 32/4 heads, SwiGLU 5632; T=256",
         flops=_llama_flops(), reps=5, params=_llama_params()),
    dict(name="vit_b16", file="vit_b16.tdsl", fn="vit_b16", build=("vit",),
         what="ViT-B/16 at 224², batch 1: patch embedding, 12 blocks, head", flops=_vit_flops(),
         reps=5, params=_vit_params()),
    dict(name="resnet50", file="resnet50.tdsl", fn="resnet50", build=("resnet50",),
         what="ResNet-50 at 224², batch 1 (BatchNorm with running statistics)", flops=_resnet_flops(),
         reps=5, params=_resnet_params()),
    dict(name="mamba_block", file="mamba_block.tdsl", fn="mamba_block", build=("mamba",),
         what="Mamba residual block, mamba-130m size (d_inner 1536, d_state 16), L=128, scan step by step",
         flops=_mamba_flops(), reps=5, params=_mamba_params()),
    dict(name="convnext_stage", file="convnext_stage.tdsl", fn="convnext", build=("convnext",),
         what="ConvNeXt-T's stage 2 -> 3 transition, batch 2: channels-first LayerNorm, 2x2 stride-2 conv 192 -> 384,"
         " one Block(384) at 14²", flops=_convnext_flops(), reps=10, params=_convnext_params()),
]


def build(kind):
    """The torch.nn.Module of a WHOLE entry's `build`, in eval mode, PyTorch's default init."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    # the blocks are reference.py's (nanoGPT's Block, transformers' LlamaDecoderLayer, timm's
    # Block): the whole models are those blocks stacked
    m = reference.modules()

    # ---- GPT-2 (nanoGPT model.py: GPT, with GPT-2's tanh GELU)
    class GPT2(nn.Module):
        def __init__(self, vocab=GPT2_VOCAB, block_size=GPT2_CTX, n_layer=GPT2_LAYERS, n_embd=GPT2_C, n_head=12):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(vocab, n_embd), wpe=nn.Embedding(block_size, n_embd),
                h=nn.ModuleList([m.NanoGPTBlock(n_embd, n_head, block_size, gelu="tanh") for _ in range(n_layer)]),
                ln_f=nn.LayerNorm(n_embd)))
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # weight tying

        def forward(self, idx):
            b, t = idx.size()
            pos = torch.arange(0, t, dtype=torch.long)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            x = self.transformer.ln_f(x)
            return self.lm_head(x)  # every position's logits (GPT2LMHeadModel's)

    # ---- ViT (timm vision_transformer.py: PatchEmbed, VisionTransformer)
    class PatchEmbed(nn.Module):
        def __init__(self, patch=16, in_chans=3, embed_dim=768):
            super().__init__()
            self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch, stride=patch)

        def forward(self, x):
            return self.proj(x).flatten(2).transpose(1, 2)

    class VisionTransformer(nn.Module):
        def __init__(self, depth=VIT_DEPTH, dim=VIT_C, heads=12, classes=1000):
            super().__init__()
            self.patch_embed = PatchEmbed(16, 3, dim)
            self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
            self.pos_embed = nn.Parameter(torch.randn(1, 197, dim) * 0.02)
            self.blocks = nn.Sequential(*[m.VitBlock(dim, heads) for _ in range(depth)])
            self.norm = nn.LayerNorm(dim, eps=1e-6)
            self.head = nn.Linear(dim, classes)

        def forward(self, x):
            x = self.patch_embed(x)
            x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
            x = x + self.pos_embed
            x = self.norm(self.blocks(x))
            return self.head(x[:, 0])

    # ---- ResNet-50 (torchvision models/resnet.py: Bottleneck, ResNet)
    class Bottleneck(nn.Module):
        def __init__(self, inplanes, width, stride=1, downsample=None):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, width * 4, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(width * 4)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = downsample

        def forward(self, x):
            identity = x
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            if self.downsample is not None:
                identity = self.downsample(x)
            out += identity
            return self.relu(out)

    class ResNet50(nn.Module):
        def __init__(self, classes=1000):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            inplanes = 64
            for s, (wid, nblk, stride) in enumerate(RESNET_STAGES, 1):
                down = nn.Sequential(nn.Conv2d(inplanes, wid * 4, 1, stride=stride, bias=False),
                                     nn.BatchNorm2d(wid * 4))
                layers = [Bottleneck(inplanes, wid, stride, down)] + [Bottleneck(wid * 4, wid) for _ in range(nblk - 1)]
                setattr(self, "layer%d" % s, nn.Sequential(*layers))
                inplanes = wid * 4
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(2048, classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    # ---- Mamba (mamba-minimal model.py: MambaBlock, ResidualBlock, einops written out; its RMSNorm
    # is LLaMA's, x * rsqrt(mean(x²) + eps) * weight)
    class MambaBlock(nn.Module):
        def __init__(self, d_model, d_inner, d_state, dt_rank, d_conv):
            super().__init__()
            self.d_inner, self.dt_rank, self.d_state = d_inner, dt_rank, d_state
            self.in_proj = nn.Linear(d_model, d_inner * 2, bias=False)
            self.conv1d = nn.Conv1d(d_inner, d_inner, kernel_size=d_conv, groups=d_inner, padding=d_conv - 1,
                                    bias=True)
            self.x_proj = nn.Linear(d_inner, dt_rank + d_state * 2, bias=False)
            self.dt_proj = nn.Linear(dt_rank, d_inner, bias=True)
            A = torch.arange(1, d_state + 1).float().repeat(d_inner, 1)
            self.A_log = nn.Parameter(torch.log(A))
            self.D = nn.Parameter(torch.ones(d_inner))
            self.out_proj = nn.Linear(d_inner, d_model, bias=False)

        def forward(self, x):
            (b, l, d) = x.shape
            x_and_res = self.in_proj(x)
            (x, res) = x_and_res.split(split_size=[self.d_inner, self.d_inner], dim=-1)
            x = x.transpose(1, 2)
            x = self.conv1d(x)[:, :, :l]
            x = x.transpose(1, 2)
            x = F.silu(x)
            y = self.ssm(x)
            y = y * F.silu(res)
            return self.out_proj(y)

        def ssm(self, x):
            A = -torch.exp(self.A_log.float())
            D = self.D.float()
            x_dbl = self.x_proj(x)
            (delta, B, C) = x_dbl.split(split_size=[self.dt_rank, self.d_state, self.d_state], dim=-1)
            delta = F.softplus(self.dt_proj(delta))
            return self.selective_scan(x, delta, A, B, C, D)

        def selective_scan(self, u, delta, A, B, C, D):
            (b, l, d_in) = u.shape
            n = A.shape[1]
            deltaA = torch.exp(torch.einsum('bld,dn->bldn', delta, A))
            deltaB_u = torch.einsum('bld,bln,bld->bldn', delta, B, u)
            x = torch.zeros((b, d_in, n), device=deltaA.device)
            ys = []
            for i in range(l):
                x = deltaA[:, i] * x + deltaB_u[:, i]
                y = torch.einsum('bdn,bn->bd', x, C[:, i, :])
                ys.append(y)
            y = torch.stack(ys, dim=1)
            return y + u * D

    class MambaResidualBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.mixer = MambaBlock(MB["d_model"], MB["d_inner"], MB["d_state"], MB["dt_rank"], MB["d_conv"])
            self.norm = m.LlamaRMSNorm(MB["d_model"], eps=1e-5)

        def forward(self, x):
            return self.mixer(self.norm(x)) + x

    # ---- ConvNeXt (facebookresearch/ConvNeXt models/convnext.py): one downsample layer and a Block, as
    # ConvNeXt.__init__ builds downsample_layers[2] and stages[2][0]
    class ConvNextStage(nn.Module):
        def __init__(self):
            super().__init__()
            self.downsample = nn.Sequential(m.ConvNextLayerNorm(CN["c0"], eps=1e-6, data_format="channels_first"),
                                            nn.Conv2d(CN["c0"], CN["c"], kernel_size=2, stride=2))
            self.block = m.ConvNextBlock(CN["c"])

        def forward(self, x):
            return self.block(self.downsample(x))

    make = {
        "gpt2": GPT2,
        "llama": lambda: m.LlamaDecoderLayer(LL["dim"], LL["nh"], LL["nkv"], LL["ff"], eps=1e-5),
        "vit": VisionTransformer,
        "resnet50": ResNet50,
        "mamba": MambaResidualBlock,
        "convnext": ConvNextStage,
    }
    return make[kind]().eval()


def _keys(src):
    return [k for s in src for k in _keys(s)] if isinstance(src, list) else [src]


def _stack(src, sd, np):
    if isinstance(src, list):
        return np.stack([_stack(s, sd, np) for s in src])
    return sd[src].detach().numpy().astype(np.float32)


def check_data(model, rng, np):
    """Inputs and weights for the correctness check, {tdsl name: array}: PyTorch's default
    init for matrices and convolutions, then every 1-D parameter made unlike an identity
    (norm weights and BatchNorm weights near 1, biases and running means near 0, running
    variances in [0.5, 1.5)); x uniform in [-1, 1), token ids uniform over the vocabulary,
    the causal mask and the RoPE tables as the LLaMA layer's callers build them."""
    import torch
    torch.manual_seed(0)
    m = build(*model["build"])
    sd = m.state_dict()
    for k, t in sd.items():
        if t.ndim == 1 and t.is_floating_point():
            u = torch.from_numpy(rng.uniform(-1, 1, tuple(t.shape)).astype(np.float32))
            if k.endswith("running_var"):
                t.copy_(1.0 + 0.5 * u)
            elif k.endswith("weight") or k.endswith(".D"):
                t.copy_(1.0 + 0.2 * u)
            else:
                t.copy_(t + 0.2 * u)
    out = {}
    for p in model["params"]:
        name, src, shape = p[:3]
        if src != "input":
            out[name] = np.ascontiguousarray(_stack(src, sd, np), dtype=np.float32).reshape(shape)
        elif name == "idx":
            out[name] = rng.integers(0, GPT2_VOCAB, shape).astype(np.int64)
        elif name == "mask":  # HF's 4-d causal mask: 0 where attending, finfo.min above the diagonal
            t = shape[-1]
            mk = np.triu(np.full((t, t), np.finfo(np.float32).min, np.float32), 1)
            out[name] = np.ascontiguousarray(np.broadcast_to(mk, shape), dtype=np.float32)
        elif name in ("cos", "sin"):  # LlamaRotaryEmbedding, base 10000, positions 0..T-1
            b, t, hd = shape
            inv = 1.0 / (10000.0 ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
            emb = np.concatenate([np.outer(np.arange(t, dtype=np.float64), inv)] * 2, axis=-1)
            f = np.cos(emb) if name == "cos" else np.sin(emb)
            out[name] = np.ascontiguousarray(np.broadcast_to(f, shape), dtype=np.float32)
        else:
            out[name] = rng.uniform(-1, 1, shape).astype(np.float32)
    return out


def load(model, arrays):
    """The model's module with its state copied from `arrays` (tdsl name -> array; a stacked
    parameter is split back into its entries), and the forward pass's inputs as torch
    tensors, in order."""
    import numpy as np
    import torch
    torch.manual_seed(0)
    m = build(*model["build"])
    sd = m.state_dict()
    ins = []
    with torch.no_grad():
        for p in model["params"]:
            name, src, shape = p[:3]
            a = np.asarray(arrays[name])
            assert tuple(a.shape) == tuple(shape), (model["name"], name, a.shape, shape)
            if src == "input":
                ins.append(torch.from_numpy(np.require(a, requirements=["C", "W"])))  # a copy only if read-only
                continue
            keys = _keys(src) if isinstance(src, list) else [src]
            flat = a.reshape((len(keys),) + tuple(sd[keys[0]].shape)) if isinstance(src, list) else [a]
            for k, v in zip(keys, flat):
                sd[k].copy_(torch.from_numpy(np.ascontiguousarray(v)))
    return m, ins
