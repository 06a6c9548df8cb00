"""Which profiled kernels are the candidate's own."""
from kbharness.common.kernels import custom_kernels, kernel_identifier

SOURCE = """
__global__ void gemv_bias_act_kernel(const float* w, float* y) {}
template <int V> __global__ void __launch_bounds__(256) rows_kernel(float* p) {}
"""


def test_identifier_drops_namespaces_templates_and_arguments():
    assert kernel_identifier("void (anonymous namespace)::gemv_bias_act_kernel<4>(float const*, float*)") == \
        "gemv_bias_act_kernel"
    assert kernel_identifier("void at::native::vectorized_elementwise_kernel<4, at::native::F>(int, F)") == \
        "vectorized_elementwise_kernel"


def test_a_kernel_the_candidate_defines_is_custom_even_with_a_library_like_name():
    launched = [("void (anonymous namespace)::gemv_bias_act_kernel(float const*, float*)", 5.0),
                ("void rows_kernel<4>(float*)", 3.0),
                ("void gemv2T_kernel_val<int, int, float, float, 128, 16, 4, 4, false, false>(...)", 9.0),
                ("void at::native::vectorized_elementwise_kernel<4, at::native::F>(int, F)", 1.0)]
    assert custom_kernels(launched, SOURCE) == [launched[0][0], launched[1][0]]
    assert custom_kernels(launched) == [launched[1][0]]


def test_dsl_kernels_are_known_by_the_names_their_compilers_give_them():
    tilelang = "import tilelang\nimport tilelang.language as T\n@T.prim_func\ndef gemv(A: T.Tensor((4,), 'float32')):\n    pass\n"
    cute = "import cutlass.cute as cute\n@cute.kernel\ndef gemv_rows(gA):\n    pass\n"
    launched = [("gemv_kernel", 4.0),  # TileLang: <prim_func>_kernel, a name the cuBLAS pattern claims
                ("kernel_cutlass_gemv_rows_tensorptrf32gmemalign16o4_0", 3.0),  # CuTe DSL's mangled name
                ("gemv2T_kernel_val<int, float, 128>(...)", 9.0)]
    assert custom_kernels(launched, tilelang) == [launched[0][0], launched[1][0]]
    assert custom_kernels(launched[:1], "") == []
    from kbharness.common import languages
    assert languages.is_own_kernel("kernel_cutlass_gemv_rows_tensorptrf32_0", cute)
    assert not languages.is_own_kernel("kernel_cutlass_other_tensorptrf32_0", cute)


def test_a_triton_candidate_that_only_wraps_torch_has_no_custom_kernel():
    source = "import triton\n@triton.jit\ndef scale_kernel(x_ptr):\n    pass\n"
    launched = [("void at::native::vectorized_elementwise_kernel<4, at::native::F>(int, F)", 2.0),
                ("ampere_sgemm_128x64_nn", 5.0)]
    assert custom_kernels(launched, source) == []
    assert custom_kernels(launched + [("scale_kernel", 1.0)], source) == ["scale_kernel"]
