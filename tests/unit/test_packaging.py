"""The package's metadata: `project.license` an SPDX expression (PEP 639), which setuptools' deprecation of the
table form (due 2027-02-18) asks for, and a build backend that reads it."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_license_is_an_spdx_string_and_the_backend_reads_it():
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert doc["project"]["license"] == "Apache-2.0"
    assert "setuptools>=77" in doc["build-system"]["requires"]  # 77.0: license expressions
    assert not any(c.startswith("License ::") for c in doc["project"].get("classifiers", []))  # refused beside it
