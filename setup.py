"""Package discovery (metadata is in pyproject.toml).

``hoare`` lives in ``src/hoare``; its trusted core ``hoare.kernel`` is the top-level
``kernel/`` directory, present in ``src/hoare`` as the symbolic link ``kernel``, so
one search under ``src`` finds every package (it follows the link).
"""

from setuptools import find_packages, setup


def packages() -> list[str]:
    return find_packages("src", include=["hoare", "hoare.*"])


setup(packages=packages())
