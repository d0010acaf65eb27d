"""tfjupyter's build. Besides the Python package it builds the JupyterLab extension
(``labextension/``, TypeScript) with npm and installs it, prebuilt, into
``share/jupyter/labextensions/``, and enables the Jupyter server extension by a config file."""
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
LABEXT_SOURCE = HERE / "labextension"
LABEXT_BUILT = HERE / "tfjupyter" / "lab" / "labextension"
LABEXT_NAME = "tfjupyter-labextension"
_LABEXT_INPUTS = ("package.json", "package-lock.json", "tsconfig.json", "src", "style", "scripts")


def _labextension_hash() -> str:
    digest = hashlib.sha256()
    for name in _LABEXT_INPUTS:
        path = LABEXT_SOURCE / name
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            if "__tests__" in f.parts or not f.exists():
                continue
            digest.update(str(f.relative_to(LABEXT_SOURCE)).encode())
            digest.update(f.read_bytes())
    return digest.hexdigest()


def build_labextension() -> None:
    """npm ci + npm run build, unless the built extension matches its sources already."""
    stamp = LABEXT_BUILT / "source-hash.txt"
    wanted = _labextension_hash()
    if stamp.exists() and stamp.read_text().strip() == wanted:
        return
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise RuntimeError("building tfjupyter's JupyterLab extension needs Node.js (>= 18) and "
                           "npm on PATH: install them (e.g. apt-get install nodejs npm) and retry")
    import jupyterlab  # a build requirement (pyproject.toml): its staging/ is the core to share

    env = dict(os.environ, JUPYTERLAB_CORE_PATH=str(Path(jupyterlab.__file__).parent / "staging"))
    lock, installed = LABEXT_SOURCE / "package-lock.json", LABEXT_SOURCE / "node_modules" / \
        ".package-lock.json"  # npm writes the latter after each install
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                       cwd=LABEXT_SOURCE, env=env, check=True)
    subprocess.run([npm, "run", "build"], cwd=LABEXT_SOURCE, env=env, check=True)
    stamp.write_text(wanted + "\n")


def labextension_data_files():
    """(install dir, [files]) pairs that put the built extension where JupyterLab finds it."""
    pairs = {}
    for f in sorted(p for p in LABEXT_BUILT.rglob("*") if p.is_file()):
        target = Path("share/jupyter/labextensions", LABEXT_NAME, f.parent.relative_to(LABEXT_BUILT))
        pairs.setdefault(target.as_posix(), []).append(f.relative_to(HERE).as_posix())
    return sorted(pairs.items())


class BuildPyAndLabextension(build_py):
    def run(self):
        build_labextension()
        self.distribution.data_files = list(self.distribution.data_files or []) + \
            labextension_data_files()
        super().run()


class TfjupyterDistribution(Distribution):
    # setuptools' editable_wheel asks has_data() before installing data_files (as "non
    # editable") but Distribution only defines has_data_files(): without this, `pip install -e .`
    # would skip the lab extension and the server extension's config.
    def has_data(self):
        return bool(self.data_files)


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
        "google-crc32c>=1.5",  # CRC-32C of TFRecord files, event files and checkpoints
        "grpcio>=1.60",
        "threadpoolctl>=3.1",
        "ipython>=8.0",
        "ipykernel>=6.5",  # dashboards pump on its IOPub thread; clusters name their kernel
        "ipyparallel>=8.6",  # clusters: its launchers start the engines that serve the tasks
        "scipy>=1.9",  # its BLAS is the one Numba's np.dot calls (intra-op thread limits)
        "tornado>=6.1",  # the server extension's handlers, the dashboard's pump
        "jupyter_core>=5.0",  # the cluster registry's default folder (the runtime dir)
        "psutil>=5.9",
        "pillow>=9",  # tf.image.decode_jpeg / decode_png
        # Live dashboards: Bokeh figures in an ipywidget (jupyter_bokeh 4 is the front end for
        # JupyterLab 4 and Notebook 7).
        "bokeh>=3.4",
        "jupyter_bokeh>=4.0,<5",  # tfjupyter/widgets/bokeh_model.py adapts its internals
        "ipywidgets>=8.0",
        # The lab extension (graph view, cluster panel) and its server extension. It is built
        # against JupyterLab 4.6 (@jupyterlab/* ^4.6 in labextension/package.json), whose
        # shared packages an older JupyterLab does not provide.
        "jupyterlab>=4.6,<5",
        # Notebook 7 runs the same extension (graph view, dashboards, magics); 7.6 is the first
        # whose front end shares JupyterLab 4.6's packages.
        "notebook>=7.6,<8",
        "jupyter_server>=2.0",
    ],
    extras_require={
        # numba-cuda is the maintained CUDA target for Numba (numba's own is deprecated); CuPy
        # adds cuBLAS GEMMs. The tests run the GPU kernels under numba-cuda's simulator.
        "gpu": ["numba-cuda>=0.20", "cupy-cuda12x>=13"],
        # Keras's HDF5 files: model.save('m.h5'), load_model, save_weights('w.h5').
        "keras": ["h5py>=3.1"],
        "test": ["pytest>=7", "pytest-timeout>=2.1", "numba-cuda>=0.20", "nbclient>=0.7",
                 "h5py>=3.1", "nbformat>=5", "ipykernel>=6", "nbconvert>=7", "playwright>=1.40",
                 "pytest-jupyter[server]>=0.10"],
    },
    entry_points={"console_scripts": ["tfjupyter=tfjupyter.cli:main"]},
    data_files=[("etc/jupyter/jupyter_server_config.d", ["jupyter-config/tfjupyter.json"])],
    cmdclass={"build_py": BuildPyAndLabextension},
    distclass=TfjupyterDistribution,
)
