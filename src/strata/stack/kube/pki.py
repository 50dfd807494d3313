"""The test bed's own certificate authority and certificates (openssl), made fresh for each bed."""

from __future__ import annotations

from pathlib import Path

from strata.core.proc import sh

from .config import CertSpec

DAYS = "3650"


def _key(path: Path) -> None:
    sh(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(path)])
    path.chmod(0o600)


def make_all(pki: Path, certs: list[CertSpec]) -> None:
    """ca.crt/ca.key, sa.key/sa.pub (service-account tokens) and NAME.crt/NAME.key for each spec."""
    pki.mkdir(parents=True, exist_ok=True)
    ca_key, ca_crt = pki / "ca.key", pki / "ca.crt"
    _key(ca_key)
    sh(
        ["openssl", "req", "-x509", "-new", "-key", str(ca_key), "-subj", "/CN=strata-kubernetes-ca", "-days", DAYS]
        + ["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]
        + ["-out", str(ca_crt)]
    )
    _key(pki / "sa.key")
    sh(["openssl", "pkey", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub")])
    for spec in certs:
        key, csr, crt, ext = (pki / f"{spec.name}.{s}" for s in ("key", "csr", "crt", "ext"))
        _key(key)
        subj = f"/CN={spec.cn}" + (f"/O={spec.org}" if spec.org else "")
        sh(["openssl", "req", "-new", "-key", str(key), "-subj", subj, "-out", str(csr)])
        ext.write_text(extensions(spec))
        sh(
            ["openssl", "x509", "-req", "-in", str(csr), "-CA", str(ca_crt), "-CAkey", str(ca_key), "-CAcreateserial"]
            + ["-days", DAYS, "-extfile", str(ext), "-out", str(crt)]
        )
        csr.unlink()
        ext.unlink()


def extensions(spec: CertSpec) -> str:
    usage = "serverAuth" if spec.server else "clientAuth"
    lines = [
        "basicConstraints=critical,CA:FALSE",
        "keyUsage=critical,digitalSignature,keyEncipherment",
        f"extendedKeyUsage={usage}",
    ]
    alt = [f"IP:{ip}" for ip in spec.ips] + [f"DNS:{d}" for d in spec.dns]
    if alt:
        lines.append("subjectAltName=" + ",".join(alt))
    return "\n".join(lines) + "\n"
