"""The bundled demo (seeds/: catalogue and snapshot) ships inside the package as zotsync/demo, so an
installed zotsync can write it anywhere (`zotsync init --demo DIR`) while the repository keeps one copy.
Everything else about the package is in pyproject.toml."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["zotsync", "zotsync.*"]), "zotsync.demo"],
    package_dir={"zotsync.demo": "seeds"},
)
