"""The tool's own key, and the LTI settings checked before anything uses them.

The LMS knows the tool by its public key (a JSON Web Key Set that the hub serves at ``/hub/lti13/jwks``, or the key
pasted into the LMS): the tool signs its client assertion with the private key (grade passback's access token,
``ags.py``). ``python -m autograder lti key FILE`` makes one: an RSA key of 2048 bits, readable by its owner only.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

# The launch's claim that holds the roster's student_id (``COURSE["lti"]["user_claim"]``): its place in the id_token,
# and in a member of the platform's member list (NRPS), where it has one.
LIS = "https://purl.imsglobal.org/spec/lti/claim/lis"
CUSTOM = "https://purl.imsglobal.org/spec/lti/claim/custom"
CLAIMS = ("lis_person_sourcedid", "sub", "email", "preferred_username", "custom:NAME")
MEMBER_FIELDS = {"sub": "user_id", "lis_person_sourcedid": "lis_person_sourcedid", "email": "email"}

LOGIN_NEEDS = ("issuer", "client_id", "deployment_id", "auth_url", "jwks_url", "tool_key")
PUSH_NEEDS = ("issuer", "client_id", "token_url", "tool_key", "lineitems_url")
URLS = ("issuer", "auth_url", "token_url", "jwks_url", "lineitems_url", "memberships_url")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class ToolKeyError(ValueError):
    """The tool's key cannot be used (the message says why and what to do)."""


def claim_value(id_token: dict, user_claim: str) -> str:
    """The value of ``user_claim`` in a launch's id_token, as text ("" where the platform did not send it)."""
    if user_claim == "lis_person_sourcedid":
        value = (id_token.get(LIS) or {}).get("person_sourcedid")
    elif user_claim.startswith("custom:"):
        value = (id_token.get(CUSTOM) or {}).get(user_claim.removeprefix("custom:"))
    else:
        value = id_token.get(user_claim)
    return "" if value is None else str(value).strip()


def member_value(member: dict, user_claim: str) -> str:
    """The value of ``user_claim`` in one member of the platform's member list (NRPS), "" where it has none."""
    value = member.get(MEMBER_FIELDS.get(user_claim, ""))
    return "" if value is None else str(value).strip()


def problems(lti, purpose: str) -> list[str]:
    """What keeps ``lti`` (``settings.Lti``) from being used for ``purpose`` ("login": the hub's; "push": grade
    passback), each as a sentence for the instructor; empty when nothing does."""
    where = "COURSE['lti']"
    found = [f"{where}['{name}'] is empty" for name in (LOGIN_NEEDS if purpose == "login" else PUSH_NEEDS)
             if not str(getattr(lti, name) or "").strip()]
    if purpose == "push" and lti.user_claim != "sub" and not lti.memberships_url:
        found.append(f"{where}['memberships_url'] is empty: with user_claim {lti.user_claim!r} the LMS's member list "
                     "says which LMS user each student is (or use user_claim 'sub', the LMS's own user id)")
    if purpose == "push" and lti.user_claim not in MEMBER_FIELDS:
        found.append(f"{where}['user_claim'] is {lti.user_claim!r}: grade passback finds students in the LMS's member "
                     f"list by {', '.join(MEMBER_FIELDS)} only")
    if not (lti.user_claim in CLAIMS[:-1] or (lti.user_claim.startswith("custom:") and len(lti.user_claim) > 7)):
        found.append(f"{where}['user_claim'] is {lti.user_claim!r}: one of {', '.join(CLAIMS)}")
    for name in URLS:
        url = str(getattr(lti, name) or "")
        if url and not _secure(url):
            found.append(f"{where}['{name}'] is {url!r}: an https:// URL (http:// only on this machine's loopback)")
    if lti.tool_key:
        try:
            load_key(lti.tool_key)
        except ToolKeyError as exc:
            found.append(str(exc))
    return found


def _secure(url: str) -> bool:
    parsed = urlparse(url)
    return parsed.scheme == "https" or (parsed.scheme == "http" and parsed.hostname in LOOPBACK)


@dataclass(frozen=True)
class ToolKey:
    """The tool's RSA key: its public half as a JSON Web Key (``kid``: the key's RFC 7638 thumbprint), and what it
    signs."""

    pem: bytes

    @property
    def private(self):
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        return load_pem_private_key(self.pem, password=None)

    @property
    def jwk(self) -> dict:
        """The public key as a JWK, with its ``kid``, ``alg`` RS256 and ``use`` sig (what the LMS is given)."""
        from jwt.algorithms import RSAAlgorithm

        jwk = RSAAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        canonical = json.dumps({k: jwk[k] for k in ("e", "kty", "n")}, separators=(",", ":"), sort_keys=True)
        kid = base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()
        return {**jwk, "kid": kid, "alg": "RS256", "use": "sig"}

    def jwks(self) -> dict:
        """The JSON Web Key Set the hub serves (``/hub/lti13/jwks``)."""
        return {"keys": [self.jwk]}

    def assertion(self, client_id: str, token_url: str, lifetime_s: int = 300) -> str:
        """The client assertion of an OAuth 2 client-credentials request (IMS Security Framework 4.1): a JWT of the
        tool (iss and sub: its client id) for the platform's token endpoint (aud), signed RS256 with this key."""
        import jwt

        now = int(time.time())
        claims = {"iss": client_id, "sub": client_id, "aud": token_url, "iat": now, "exp": now + lifetime_s,
                  "jti": uuid.uuid4().hex}
        return jwt.encode(claims, self.private, algorithm="RS256", headers={"kid": self.jwk["kid"]})


def load_key(path) -> ToolKey:
    """The tool's key at ``path``: an unencrypted RSA private key (PEM) that only its owner may read."""
    path = Path(path)
    try:
        st = path.stat()
        pem = path.read_bytes()
    except PermissionError as exc:
        raise ToolKeyError(f"the tool's key {path} cannot be read by this account (uid {os.geteuid()}): run this as "
                           "the key's owner (root, where `lti key` ran as root)") from exc
    except OSError as exc:
        raise ToolKeyError(f"the tool's key {path} cannot be read ({exc.strerror}): make one with "
                           f"`python -m autograder lti key {path}`") from exc
    if st.st_mode & 0o077:
        raise ToolKeyError(f"the tool's key {path} is readable by others (mode {stat.S_IMODE(st.st_mode):04o}): "
                           f"`chmod 600 {path}`; whoever reads it can post grades as the course")
    key = ToolKey(pem)
    try:
        from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

        if not isinstance(key.private, RSAPrivateKey):
            raise ValueError("not an RSA key")
    except (ValueError, TypeError) as exc:
        raise ToolKeyError(f"the tool's key {path} is not an unencrypted RSA private key in PEM ({exc})") from exc
    return key


def make_key(path) -> ToolKey:
    """A new RSA key of 2048 bits at ``path`` (mode 0600; an existing file is never replaced)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    path = Path(path)
    pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)   # FileExistsError where it exists
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    return ToolKey(pem)
