"""The fused epilogue activations the GEMM kernel takes, named apart from the kernel so `tessera.ops` can check
an argument without loading the tracer."""

ACTIVATIONS = ("none", "relu", "gelu", "silu")
GRADS = ("relu_grad", "gelu_grad", "silu_grad")  # residual * act'(z): the backward of a fused activation
