"""Package discovery over hoare's two source roots (metadata is in pyproject.toml).

``hoare`` lives in ``src/hoare``; its trusted core ``hoare.kernel`` is the
top-level ``kernel/`` directory. ``[tool.setuptools.packages.find]`` searches
each ``where`` root under its own names, so it cannot map ``kernel/`` to
``hoare.kernel``: the packages are found here, under both roots, and
``package-dir`` in pyproject.toml maps the names to directories.
"""

from setuptools import find_packages, setup


def packages() -> list[str]:
    library = find_packages("src", include=["hoare", "hoare.*"])
    kernel = ["hoare.kernel", *(f"hoare.kernel.{name}" for name in find_packages("kernel"))]
    return library + kernel


setup(packages=packages())
