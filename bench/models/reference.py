"""bench/models/reference.py — the models of bench/models/*.tdsl as torch.nn.Modules.

Each class follows the public definition it names (nanoGPT's model.py, Hugging Face's
modeling_llama.py, timm's vision_transformer.py and mlp_mixer.py, torchvision's
resnet.py), cut down to one block, in eval mode (dropout and drop-path are identities and
left out), for PyTorch 1.13 (no scaled_dot_product_attention: nanoGPT's and timm's
non-fused attention paths). bench/run.py times each one as eager PyTorch and checks the
.tdsl function of the same name against it.

MODELS lists, for each model, the .tdsl function's parameters in declaration order: an
input of the forward pass ("input") or the state_dict entry it is copied from, so that
both sides compute with the same arrays. This module imports torch only inside
functions: the harness reads MODELS without it.
"""
import math

# name, .tdsl file and function, what it is, reps for timing (the warm-up is
# halide_work.warmup_for(reps), the same for every peer), and the parameters
# (tdsl name, "input" or state_dict key, shape). `flops` counts the matmuls (2·M·N·K),
# the bulk of the arithmetic; normalizations and activations are left out.


def _gpt_flops(b, t, c):
    tok = b * t
    return 2 * tok * c * (3 * c + c + 4 * c + 4 * c) + 2 * 2 * b * t * t * c


def _llama_flops(b, t, dim, nh, nkv, ff):
    hd = dim // nh
    tok = b * t
    return 2 * tok * dim * (nh * hd + 2 * nkv * hd + nh * hd + 3 * ff) + 2 * 2 * b * nh * t * t * hd


def _vit_flops(b, n, c):
    tok = b * n
    return 2 * tok * c * (3 * c + c + 4 * c + 4 * c) + 2 * 2 * b * n * n * c


def _mixer_flops(b, s, c, ds, dc):
    return 2 * b * (2 * c * s * ds + 2 * s * c * dc)


def _resnet_flops(n, c, h, w):
    return 2 * (2 * n * c * h * w * 9 * c)


MODELS = [
    dict(name="nanogpt", file="nanogpt_block.tdsl", fn="nanogpt_block",
         what="nanoGPT Block: pre-LN, causal MHA, GELU MLP; B=4, T=128, C=768, 12 heads",
         flops=_gpt_flops(4, 128, 768), reps=8,
         params=[("x", "input", (4, 128, 768)),
                 ("ln1_w", "ln_1.weight", (768,)), ("ln1_b", "ln_1.bias", (768,)),
                 ("attn_w", "attn.c_attn.weight", (2304, 768)), ("attn_b", "attn.c_attn.bias", (2304,)),
                 ("attn_proj_w", "attn.c_proj.weight", (768, 768)), ("attn_proj_b", "attn.c_proj.bias", (768,)),
                 ("ln2_w", "ln_2.weight", (768,)), ("ln2_b", "ln_2.bias", (768,)),
                 ("fc_w", "mlp.c_fc.weight", (3072, 768)), ("fc_b", "mlp.c_fc.bias", (3072,)),
                 ("mlp_proj_w", "mlp.c_proj.weight", (768, 3072)), ("mlp_proj_b", "mlp.c_proj.bias", (768,))]),
    dict(name="llama", file="llama_layer.tdsl", fn="llama_layer",
         what="LLaMA decoder layer: RMSNorm, RoPE, GQA 8/2 heads, SwiGLU; B=2, T=128, dim 512",
         flops=_llama_flops(2, 128, 512, 8, 2, 1536), reps=15,
         params=[("x", "input", (2, 128, 512)), ("mask", "input", (2, 1, 128, 128)),
                 ("cos", "input", (2, 128, 64)), ("sin", "input", (2, 128, 64)),
                 ("attn_norm_w", "input_layernorm.weight", (512,)),
                 ("q_w", "self_attn.q_proj.weight", (512, 512)),
                 ("k_w", "self_attn.k_proj.weight", (128, 512)),
                 ("v_w", "self_attn.v_proj.weight", (128, 512)),
                 ("o_w", "self_attn.o_proj.weight", (512, 512)),
                 ("mlp_norm_w", "post_attention_layernorm.weight", (512,)),
                 ("gate_w", "mlp.gate_proj.weight", (1536, 512)),
                 ("up_w", "mlp.up_proj.weight", (1536, 512)),
                 ("down_w", "mlp.down_proj.weight", (512, 1536))]),
    dict(name="vit", file="vit_block.tdsl", fn="vit_block",
         what="ViT-S/16 Block: LayerNorm, MHA, GELU MLP; 197 tokens, dim 384, 6 heads",
         flops=_vit_flops(1, 197, 384), reps=15,
         params=[("x", "input", (1, 197, 384)),
                 ("norm1_w", "norm1.weight", (384,)), ("norm1_b", "norm1.bias", (384,)),
                 ("qkv_w", "attn.qkv.weight", (1152, 384)), ("qkv_b", "attn.qkv.bias", (1152,)),
                 ("proj_w", "attn.proj.weight", (384, 384)), ("proj_b", "attn.proj.bias", (384,)),
                 ("norm2_w", "norm2.weight", (384,)), ("norm2_b", "norm2.bias", (384,)),
                 ("fc1_w", "mlp.fc1.weight", (1536, 384)), ("fc1_b", "mlp.fc1.bias", (1536,)),
                 ("fc2_w", "mlp.fc2.weight", (384, 1536)), ("fc2_b", "mlp.fc2.bias", (384,))]),
    dict(name="mixer", file="mixer_block.tdsl", fn="mixer_block",
         what="MLP-Mixer S/16 block: token- and channel-mixing MLPs; 196 patches, 512 channels",
         flops=_mixer_flops(1, 196, 512, 256, 2048), reps=15,
         params=[("x", "input", (1, 196, 512)),
                 ("norm1_w", "norm1.weight", (512,)), ("norm1_b", "norm1.bias", (512,)),
                 ("tok_fc1_w", "mlp_tokens.fc1.weight", (256, 196)), ("tok_fc1_b", "mlp_tokens.fc1.bias", (256,)),
                 ("tok_fc2_w", "mlp_tokens.fc2.weight", (196, 256)), ("tok_fc2_b", "mlp_tokens.fc2.bias", (196,)),
                 ("norm2_w", "norm2.weight", (512,)), ("norm2_b", "norm2.bias", (512,)),
                 ("ch_fc1_w", "mlp_channels.fc1.weight", (2048, 512)), ("ch_fc1_b", "mlp_channels.fc1.bias", (2048,)),
                 ("ch_fc2_w", "mlp_channels.fc2.weight", (512, 2048)), ("ch_fc2_b", "mlp_channels.fc2.bias", (512,))]),
    dict(name="resnet", file="resnet_block.tdsl", fn="resnet_block",
         what="ResNet BasicBlock: conv3x3-BN-ReLU-conv3x3-BN + x, ReLU; 64 channels, 56×56",
         flops=_resnet_flops(1, 64, 56, 56), reps=15,
         params=[("x", "input", (1, 64, 56, 56)),
                 ("conv1_w", "conv1.weight", (64, 64, 3, 3)),
                 ("bn1_mean", "bn1.running_mean", (64,)), ("bn1_var", "bn1.running_var", (64,)),
                 ("bn1_w", "bn1.weight", (64,)), ("bn1_b", "bn1.bias", (64,)),
                 ("conv2_w", "conv2.weight", (64, 64, 3, 3)),
                 ("bn2_mean", "bn2.running_mean", (64,)), ("bn2_var", "bn2.running_var", (64,)),
                 ("bn2_w", "bn2.weight", (64,)), ("bn2_b", "bn2.bias", (64,))]),
]


def modules():
    """The torch.nn.Module classes of the models (and of bench/models/whole.py's, which
    builds its whole models from these blocks), defined once, on first use: a namespace
    of classes and helpers."""
    global _MODULES
    if _MODULES is None:
        _MODULES = _define_modules()
    return _MODULES


_MODULES = None


def _define_modules():
    import types

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    # ---- nanoGPT (github.com/karpathy/nanoGPT, model.py): LayerNorm, CausalSelfAttention, MLP, Block
    class LayerNorm(nn.Module):
        def __init__(self, ndim, bias):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(ndim))
            self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

        def forward(self, input):
            return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)

    class CausalSelfAttention(nn.Module):
        def __init__(self, n_embd, n_head, block_size, bias=True):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
            self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
            self.n_head, self.n_embd = n_head, n_embd
            # the causal mask: a buffer, not a weight (out of the state_dict)
            self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                                 .view(1, 1, block_size, block_size), persistent=False)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            y = att @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class GptMLP(nn.Module):
        def __init__(self, n_embd, bias=True, gelu="none"):  # gelu "tanh": GPT-2's gelu_new
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
            self.gelu = nn.GELU(approximate=gelu)
            self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)

        def forward(self, x):
            return self.c_proj(self.gelu(self.c_fc(x)))

    class NanoGPTBlock(nn.Module):
        def __init__(self, n_embd, n_head, block_size, bias=True, gelu="none"):
            super().__init__()
            self.ln_1 = LayerNorm(n_embd, bias=bias)
            self.attn = CausalSelfAttention(n_embd, n_head, block_size, bias)
            self.ln_2 = LayerNorm(n_embd, bias=bias)
            self.mlp = GptMLP(n_embd, bias, gelu)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            x = x + self.mlp(self.ln_2(x))
            return x

    # ---- LLaMA (transformers, models/llama/modeling_llama.py): RMSNorm, RoPE, GQA, SwiGLU
    class LlamaRMSNorm(nn.Module):
        def __init__(self, hidden_size, eps=1e-6):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden_size))
            self.variance_epsilon = eps

        def forward(self, hidden_states):
            input_dtype = hidden_states.dtype
            hidden_states = hidden_states.to(torch.float32)
            variance = hidden_states.pow(2).mean(-1, keepdim=True)
            hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
            return self.weight * hidden_states.to(input_dtype)

    def rotate_half(x):
        x1 = x[..., : x.shape[-1] // 2]
        x2 = x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
        cos = cos.unsqueeze(unsqueeze_dim)
        sin = sin.unsqueeze(unsqueeze_dim)
        q_embed = (q * cos) + (rotate_half(q) * sin)
        k_embed = (k * cos) + (rotate_half(k) * sin)
        return q_embed, k_embed

    def repeat_kv(hidden_states, n_rep):
        batch, num_key_value_heads, slen, head_dim = hidden_states.shape
        if n_rep == 1:
            return hidden_states
        hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
        return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)

    class LlamaAttention(nn.Module):
        def __init__(self, hidden_size, num_heads, num_key_value_heads):
            super().__init__()
            self.num_heads, self.num_key_value_heads = num_heads, num_key_value_heads
            self.head_dim = hidden_size // num_heads
            self.num_key_value_groups = num_heads // num_key_value_heads
            self.q_proj = nn.Linear(hidden_size, num_heads * self.head_dim, bias=False)
            self.k_proj = nn.Linear(hidden_size, num_key_value_heads * self.head_dim, bias=False)
            self.v_proj = nn.Linear(hidden_size, num_key_value_heads * self.head_dim, bias=False)
            self.o_proj = nn.Linear(num_heads * self.head_dim, hidden_size, bias=False)

        def forward(self, hidden_states, attention_mask, position_embeddings):
            bsz, q_len, _ = hidden_states.size()
            query_states = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
            key_states = self.k_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads,
                                                         self.head_dim).transpose(1, 2)
            value_states = self.v_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads,
                                                           self.head_dim).transpose(1, 2)
            cos, sin = position_embeddings
            query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
            key_states = repeat_kv(key_states, self.num_key_value_groups)
            value_states = repeat_kv(value_states, self.num_key_value_groups)
            attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
            attn_weights = attn_weights + attention_mask[:, :, :, : key_states.shape[-2]]
            attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
            attn_output = torch.matmul(attn_weights, value_states)
            attn_output = attn_output.transpose(1, 2).contiguous()
            attn_output = attn_output.reshape(bsz, q_len, -1)
            return self.o_proj(attn_output)

    class LlamaMLP(nn.Module):
        def __init__(self, hidden_size, intermediate_size):
            super().__init__()
            self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
            self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
            self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)
            self.act_fn = nn.SiLU()

        def forward(self, x):
            return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))

    class LlamaDecoderLayer(nn.Module):
        def __init__(self, hidden_size, num_heads, num_key_value_heads, intermediate_size, eps=1e-6):
            super().__init__()
            self.self_attn = LlamaAttention(hidden_size, num_heads, num_key_value_heads)
            self.mlp = LlamaMLP(hidden_size, intermediate_size)
            self.input_layernorm = LlamaRMSNorm(hidden_size, eps=eps)
            self.post_attention_layernorm = LlamaRMSNorm(hidden_size, eps=eps)

        def forward(self, hidden_states, attention_mask, cos, sin):
            residual = hidden_states
            hidden_states = self.input_layernorm(hidden_states)
            hidden_states = self.self_attn(hidden_states, attention_mask, (cos, sin))
            hidden_states = residual + hidden_states
            residual = hidden_states
            hidden_states = self.post_attention_layernorm(hidden_states)
            hidden_states = self.mlp(hidden_states)
            return residual + hidden_states

    # ---- timm (vision_transformer.py: Attention, Block; layers/mlp.py: Mlp; mlp_mixer.py: MixerBlock)
    class Mlp(nn.Module):
        def __init__(self, in_features, hidden_features):
            super().__init__()
            self.fc1 = nn.Linear(in_features, hidden_features)
            self.act = nn.GELU()
            self.fc2 = nn.Linear(hidden_features, in_features)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))

    class Attention(nn.Module):
        def __init__(self, dim, num_heads=8, qkv_bias=False):
            super().__init__()
            self.num_heads = num_heads
            self.head_dim = dim // num_heads
            self.scale = self.head_dim ** -0.5
            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            B, N, C = x.shape
            qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
            q = q * self.scale
            attn = q @ k.transpose(-2, -1)
            attn = attn.softmax(dim=-1)
            x = attn @ v
            x = x.transpose(1, 2).reshape(B, N, C)
            return self.proj(x)

    class VitBlock(nn.Module):
        def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=True):
            super().__init__()
            self.norm1 = nn.LayerNorm(dim, eps=1e-6)
            self.attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias)
            self.norm2 = nn.LayerNorm(dim, eps=1e-6)
            self.mlp = Mlp(dim, int(dim * mlp_ratio))

        def forward(self, x):
            x = x + self.attn(self.norm1(x))
            x = x + self.mlp(self.norm2(x))
            return x

    class MixerBlock(nn.Module):
        def __init__(self, dim, seq_len, mlp_ratio=(0.5, 4.0)):
            super().__init__()
            tokens_dim, channels_dim = [int(x * dim) for x in mlp_ratio]
            self.norm1 = nn.LayerNorm(dim, eps=1e-6)
            self.mlp_tokens = Mlp(seq_len, tokens_dim)
            self.norm2 = nn.LayerNorm(dim, eps=1e-6)
            self.mlp_channels = Mlp(dim, channels_dim)

        def forward(self, x):
            x = x + self.mlp_tokens(self.norm1(x).transpose(1, 2)).transpose(1, 2)
            x = x + self.mlp_channels(self.norm2(x))
            return x

    # ---- torchvision (models/resnet.py): BasicBlock without downsample
    def conv3x3(in_planes, out_planes, stride=1):
        return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)

    class BasicBlock(nn.Module):
        def __init__(self, inplanes, planes):
            super().__init__()
            self.conv1 = conv3x3(inplanes, planes)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = conv3x3(planes, planes)
            self.bn2 = nn.BatchNorm2d(planes)

        def forward(self, x):
            identity = x
            out = self.conv1(x)
            out = self.bn1(out)
            out = self.relu(out)
            out = self.conv2(out)
            out = self.bn2(out)
            out += identity
            out = self.relu(out)
            return out

    # ---- ConvNeXt (github.com/facebookresearch/ConvNeXt, models/convnext.py): LayerNorm, Block
    # (DropPath omitted: the identity in eval mode)
    class ConvNextLayerNorm(nn.Module):
        def __init__(self, normalized_shape, eps=1e-6, data_format="channels_last"):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(normalized_shape))
            self.bias = nn.Parameter(torch.zeros(normalized_shape))
            self.eps = eps
            self.data_format = data_format
            if self.data_format not in ["channels_last", "channels_first"]:
                raise NotImplementedError
            self.normalized_shape = (normalized_shape, )

        def forward(self, x):
            if self.data_format == "channels_last":
                return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
            elif self.data_format == "channels_first":
                u = x.mean(1, keepdim=True)
                s = (x - u).pow(2).mean(1, keepdim=True)
                x = (x - u) / torch.sqrt(s + self.eps)
                x = self.weight[:, None, None] * x + self.bias[:, None, None]
                return x

    class ConvNextBlock(nn.Module):
        def __init__(self, dim, layer_scale_init_value=1e-6):
            super().__init__()
            self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
            self.norm = ConvNextLayerNorm(dim, eps=1e-6)
            self.pwconv1 = nn.Linear(dim, 4 * dim)
            self.act = nn.GELU()
            self.pwconv2 = nn.Linear(4 * dim, dim)
            self.gamma = nn.Parameter(layer_scale_init_value * torch.ones((dim)), requires_grad=True) \
                if layer_scale_init_value > 0 else None

        def forward(self, x):
            input = x
            x = self.dwconv(x)
            x = x.permute(0, 2, 3, 1)  # (N, C, H, W) -> (N, H, W, C)
            x = self.norm(x)
            x = self.pwconv1(x)
            x = self.act(x)
            x = self.pwconv2(x)
            if self.gamma is not None:
                x = self.gamma * x
            x = x.permute(0, 3, 1, 2)  # (N, H, W, C) -> (N, C, H, W)
            return input + x

    return types.SimpleNamespace(
        LayerNorm=LayerNorm, CausalSelfAttention=CausalSelfAttention, GptMLP=GptMLP, NanoGPTBlock=NanoGPTBlock,
        LlamaRMSNorm=LlamaRMSNorm, rotate_half=rotate_half, apply_rotary_pos_emb=apply_rotary_pos_emb,
        repeat_kv=repeat_kv, LlamaAttention=LlamaAttention, LlamaMLP=LlamaMLP, LlamaDecoderLayer=LlamaDecoderLayer,
        Mlp=Mlp, Attention=Attention, VitBlock=VitBlock, MixerBlock=MixerBlock, conv3x3=conv3x3,
        BasicBlock=BasicBlock, ConvNextLayerNorm=ConvNextLayerNorm, ConvNextBlock=ConvNextBlock)


def build(name):
    """The torch.nn.Module of model `name`, in eval mode, with PyTorch's default init."""
    m = modules()
    make = {
        "nanogpt": lambda: m.NanoGPTBlock(768, 12, 128),
        "llama": lambda: m.LlamaDecoderLayer(512, 8, 2, 1536),
        "vit": lambda: m.VitBlock(384, 6),
        "mixer": lambda: m.MixerBlock(512, 196),
        "resnet": lambda: m.BasicBlock(64, 64),
    }
    return make[name]().eval()


def check_data(model, rng, np):
    """Inputs and weights for the correctness check, as {tdsl name: float32 array}: PyTorch's
    default init for the matrices, then norm weights near 1, biases and BatchNorm means
    near 0 and variances in [0.5, 1.5) (so that none of them is the identity), x uniform in
    [-1, 1), the causal mask and the RoPE tables as the models build them."""
    import torch
    torch.manual_seed(0)
    m = build(model["name"])
    sd = m.state_dict()
    out = {}
    for name, src, shape in model["params"]:
        if src != "input":
            t = sd[src].detach().numpy().astype(np.float32)
            if t.ndim == 1:
                u = rng.uniform(-1, 1, t.shape)
                if src.endswith("running_var"):
                    t = 1.0 + 0.5 * u
                elif src.endswith("weight"):
                    t = 1.0 + 0.2 * u
                else:
                    t = t + 0.2 * u
            out[name] = np.ascontiguousarray(t, dtype=np.float32)
            continue
        if name == "mask":  # HF's 4-d causal mask: 0 where attending, finfo.min above the diagonal
            b, _, t, _ = shape
            mk = np.triu(np.full((t, t), np.finfo(np.float32).min, np.float32), 1)
            out[name] = np.ascontiguousarray(np.broadcast_to(mk, shape), dtype=np.float32)
        elif name in ("cos", "sin"):  # LlamaRotaryEmbedding, base 10000, positions 0..T-1
            b, t, hd = shape
            inv = 1.0 / (10000.0 ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
            freqs = np.outer(np.arange(t, dtype=np.float64), inv)
            emb = np.concatenate([freqs, freqs], axis=-1)
            f = np.cos(emb) if name == "cos" else np.sin(emb)
            out[name] = np.ascontiguousarray(np.broadcast_to(f, shape), dtype=np.float32)
        else:
            out[name] = rng.uniform(-1, 1, shape).astype(np.float32)
    return out


def load(model, arrays):
    """The model's module with its state copied from `arrays` (tdsl name -> array), and
    the forward pass's inputs as torch tensors, in the .tdsl function's order."""
    import torch
    torch.manual_seed(0)
    m = build(model["name"])
    sd = m.state_dict()
    ins = []
    with torch.no_grad():
        for name, src, shape in model["params"]:
            a = torch.from_numpy(arrays[name])
            assert tuple(a.shape) == tuple(shape), (model["name"], name, a.shape, shape)
            if src == "input":
                ins.append(a)
            else:
                sd[src].copy_(a)
    return m, ins
