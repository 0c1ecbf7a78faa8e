"""The fused LSTM cell (`elmo_bilm/model/fused_cell.c`) built with the package, once per instruction
set the runtime picks from (`elmo_bilm.model.fused_cell.VARIANTS`), so that nothing is compiled
while a user runs. Optional: where there is no C compiler, no glibc vector maths (libmvec) or
another architecture, the build goes on without them and the LSTM runs as eager ops. Everything
else about the distribution is in pyproject.toml."""

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE = "../../elmo_bilm/model/fused_cell.c"  # pyproject.toml's package-dir
FLAGS = ["-O3", "-fno-math-errno", "-fopenmp-simd"]
# the compiler's flags per PyTorch CPU capability (`torch.backends.cpu.get_cpu_capability()`)
ARCH_FLAGS = {
    "avx2": ["-mavx2", "-mfma"],
    "avx512": [
        "-mavx2",
        "-mfma",
        "-mavx512f",
        "-mavx512dq",
        "-mavx512bw",
        "-mavx512vl",
        "-mprefer-vector-width=512",
    ],
}


class BuildVariants(build_ext):
    """Each variant compiled in a temporary folder of its own: they share one source, whose
    object file would otherwise be one path for all. The source is named by its absolute path
    here (setuptools refuses one in the declaration), so that the object file is inside that
    folder, not `../..` above it."""

    def build_extension(self, ext: Extension) -> None:
        shared: str = self.build_temp  # type: ignore[has-type]  # set by finalize_options
        sources = ext.sources
        self.build_temp = os.path.join(shared, ext.name)
        ext.sources = [os.path.abspath(source) for source in sources]
        try:
            super().build_extension(ext)
        finally:
            self.build_temp, ext.sources = shared, sources


setup(
    ext_modules=[
        Extension(
            f"elmo_bilm.model._fused_cell_{variant}",
            sources=[SOURCE],
            extra_compile_args=FLAGS + flags,
            libraries=["mvec", "m"],
            depends=[SOURCE],
            optional=True,
        )
        for variant, flags in ARCH_FLAGS.items()
    ],
    cmdclass={"build_ext": BuildVariants},
)
