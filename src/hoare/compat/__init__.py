"""Compatibility layers for code written against other libraries (``hoare.compat.symbolicai``)."""
