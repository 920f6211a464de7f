"""SecretBox: AES-256-GCM round trips, refusals of wrong keys and altered data, the key file."""

from __future__ import annotations

import base64
import os
import pickle
import stat
from pathlib import Path

import pytest

from libs.secrets import DecryptError, SecretBox, SecretKeyError, generate_key, load_or_create_key

pytestmark = pytest.mark.unit

AAD = b"\x01" * 16
SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz"


@pytest.fixture
def box() -> SecretBox:
    return SecretBox.from_setting(generate_key())


@pytest.mark.parametrize("plaintext", [SECRET, "", "ключ-🔑", "x" * 4096])
def test_round_trip(box: SecretBox, plaintext: str) -> None:
    blob = box.encrypt(plaintext, aad=AAD)
    assert box.decrypt(blob, aad=AAD) == plaintext


def test_blob_layout_and_fresh_nonces(box: SecretBox) -> None:
    first, second = box.encrypt(SECRET, aad=AAD), box.encrypt(SECRET, aad=AAD)
    assert first[0] == 1  # version byte
    assert len(first) == 1 + 12 + len(SECRET) + 16
    assert first[1:13] != second[1:13]
    assert SECRET.encode() not in first


def test_wrong_key_is_refused(box: SecretBox) -> None:
    blob = box.encrypt(SECRET, aad=AAD)
    with pytest.raises(DecryptError) as info:
        SecretBox.from_setting(generate_key()).decrypt(blob, aad=AAD)
    assert SECRET not in str(info.value)


@pytest.mark.parametrize("index", [0, 1, 12, 13, -1])
def test_tampered_blob_is_refused(box: SecretBox, index: int) -> None:
    blob = bytearray(box.encrypt(SECRET, aad=AAD))
    blob[index] ^= 0x01
    with pytest.raises(DecryptError):
        box.decrypt(bytes(blob), aad=AAD)


def test_truncated_blob_is_refused(box: SecretBox) -> None:
    blob = box.encrypt(SECRET, aad=AAD)
    for cut in (b"", blob[:1], blob[:28], blob[:-1]):
        with pytest.raises(DecryptError):
            box.decrypt(cut, aad=AAD)


def test_wrong_aad_is_refused(box: SecretBox) -> None:
    blob = box.encrypt(SECRET, aad=AAD)
    with pytest.raises(DecryptError):
        box.decrypt(blob, aad=b"\x02" * 16)
    with pytest.raises(DecryptError):
        box.decrypt(blob, aad=b"")


def test_from_setting_accepts_the_usual_spellings() -> None:
    raw = bytes(range(250, 256)) + bytes(26)  # bytes that use '-' / '_' in URL-safe base64
    urlsafe = base64.urlsafe_b64encode(raw).decode()
    standard = base64.b64encode(raw).decode()
    blob = SecretBox(raw).encrypt(SECRET, aad=AAD)
    for text in (urlsafe, urlsafe.rstrip("="), f"  {urlsafe}\n", standard):
        assert SecretBox.from_setting(text).decrypt(blob, aad=AAD) == SECRET


@pytest.mark.parametrize(
    "value",
    [
        "",
        "   ",
        "not base64 at all!",
        base64.urlsafe_b64encode(os.urandom(16)).decode(),
        base64.urlsafe_b64encode(os.urandom(33)).decode(),
        "A" * 43 + "=" * 3,
        "abc=def" + "A" * 37,
    ],
)
def test_malformed_key_setting(value: str) -> None:
    with pytest.raises(SecretKeyError) as info:
        SecretBox.from_setting(value)
    message = str(info.value)
    assert "32 bytes" in message or "base64" in message
    if value.strip():
        assert value.strip() not in message


def test_raw_key_length_is_checked() -> None:
    with pytest.raises(SecretKeyError):
        SecretBox(b"short")


def test_box_hides_its_key() -> None:
    key = generate_key()
    box = SecretBox.from_setting(key)
    assert key not in repr(box)
    assert "hidden" in repr(box)
    with pytest.raises(TypeError):
        pickle.dumps(box)


def test_key_file_is_created_private_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "data" / "secret.key"
    key = load_or_create_key(path)
    assert path.read_text().strip() == key
    if os.name == "posix":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_key(path) == key
    assert sorted(p.name for p in path.parent.iterdir()) == ["secret.key"]
    blob = SecretBox.from_setting(key).encrypt(SECRET, aad=AAD)
    assert SecretBox.from_setting(load_or_create_key(path)).decrypt(blob, aad=AAD) == SECRET


def test_keys_differ_between_files(tmp_path: Path) -> None:
    assert load_or_create_key(tmp_path / "a.key") != load_or_create_key(tmp_path / "b.key")


def test_malformed_key_file_is_reported_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "secret.key"
    path.write_text("garbage\n")
    with pytest.raises(SecretKeyError, match=r"secret\.key"):
        load_or_create_key(path)
    assert path.read_text() == "garbage\n"
