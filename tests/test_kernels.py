"""Which profiled kernels are the candidate's own."""
from kbharness.kernels import custom_kernels, kernel_identifier

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
