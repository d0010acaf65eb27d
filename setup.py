from setuptools import find_packages, setup

setup(
    name="tfjupyter",
    version="0.1.0",
    description="The distributed TensorFlow programming model, interactive in Jupyter.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["tfjupyter", "tfjupyter.*"])
    + ["tfjupyter.kernels"] + ["tfjupyter.kernels." + p for p in find_packages("kernels")],
    package_dir={"tfjupyter.kernels": "kernels"},
    install_requires=[
        "numpy>=1.24",
        "numba>=0.59",
        "scikit-learn>=1.2",
        "tensorboard>=2.12",
        "protobuf>=7.35.1",  # distributed/protocol_pb2.py was generated for it
        "grpcio>=1.60",
        "threadpoolctl>=3.1",
        "ipython>=8.0",
        "ipyparallel>=8.6",  # clusters: its launchers start the engines that serve the tasks
        "psutil>=5.9",
        # Live dashboards: Bokeh figures in an ipywidget (jupyter_bokeh 4 is the front end for
        # JupyterLab 4 and Notebook 7).
        "bokeh>=3.4",
        "jupyter_bokeh>=4.0",
        "ipywidgets>=8.0",
    ],
    extras_require={
        # numba-cuda is the maintained CUDA target for Numba (numba's own is deprecated); CuPy
        # adds cuBLAS GEMMs. The tests run the GPU kernels under numba-cuda's simulator.
        "gpu": ["numba-cuda>=0.20", "cupy-cuda12x>=13"],
        "test": ["pytest>=7", "pytest-timeout>=2.1", "numba-cuda>=0.20", "nbclient>=0.7",
                 "nbformat>=5", "ipykernel>=6", "nbconvert>=7", "jupyterlab>=4.0",
                 "playwright>=1.40"],
    },
    entry_points={"console_scripts": ["tfjupyter=tfjupyter.cli:main"]},
)
