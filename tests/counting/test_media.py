"""Images, PDFs and audio are counted by the providers' documented rules, not by base64 length.

The files are real: PNG written with zlib (a valid image any decoder opens), JPEG / GIF / WebP
written by Pillow when it is installed, PDFs written object by object, WAV by the ``wave``
module. Expected costs are the providers' formulas written out here, independently of our code:

* OpenAI (platform.openai.com/docs/guides/images-vision): fit 2048x2048, shortest side to 768,
  85 + 170 per 512-px tile on gpt-4o; 2,833 + 5,667 on gpt-4o-mini; patch models: 32-px patches
  (<= 1,536) x 1.62 on gpt-4.1-mini.
* Anthropic (docs.claude.com/en/docs/build-with-claude/vision): w*h/750, long edge <= 1,568.
* Gemini (ai.google.dev/gemini-api/docs/tokens): 258 within 384x384, else 258 per 768x768 tile;
  258 per PDF page; 32 tokens per second of audio.
"""

from __future__ import annotations

import base64
import io
import math
import struct
import wave
import zlib
from typing import Any

import pytest

from context_manager.counting import count_tokens, get_counter
from context_manager.messages import normalize
from context_manager.messages.media import image_size, pdf_pages, wav_seconds


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = zlib.compress((b"\0" + b"\x80" * (3 * width)) * height)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")
    )


def pil_image(width: int, height: int, fmt: str, **save: Any) -> bytes:
    image_module = pytest.importorskip("PIL.Image")
    out = io.BytesIO()
    image_module.new("RGB", (width, height), (200, 30, 30)).save(out, fmt, **save)
    return out.getvalue()


def pdf(pages: int, padding: int = 0, compressed: bool = False) -> bytes:
    """A PDF with ``pages`` pages; ``padding`` bytes of incompressible stream make it large;
    ``compressed`` hides the page objects in a Flate object stream (PDF 1.5 style)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{3 + i} 0 R" for i in range(pages))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode())
    page_objs = [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * pages
    if compressed:
        objects[1] = f"<< /Kids [{kids}] /Type /Pages >>".replace("/Type /Pages", "").encode()
        packed = zlib.compress(b"\n".join(page_objs))
        objects.append(
            b"<< /Type /ObjStm /Filter /FlateDecode >>\nstream\n" + packed + b"\nendstream"
        )
    else:
        objects.extend(page_objs)
    if padding:
        blob = zlib.compress(bytes((i * 7919 + i // 13) % 251 for i in range(padding)), 0)
        objects.append(b"<< /Length %d >>\nstream\n" % len(blob) + blob + b"\nendstream")
    body = b"%PDF-1.7\n"
    for number, obj in enumerate(objects, 1):
        body += b"%d 0 obj\n" % number + obj + b"\nendobj\n"
    return body + b"trailer << /Root 1 0 R >>\n%%EOF\n"


def wav(seconds: float, rate: int = 16_000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(b"\0\0" * int(seconds * rate))
    return out.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def openai_image(data: bytes, detail: str | None = None) -> dict[str, Any]:
    url: dict[str, Any] = {"url": f"data:image/png;base64,{b64(data)}"}
    if detail:
        url["detail"] = detail
    return {"role": "user", "content": [{"type": "image_url", "image_url": url}]}


def claude_image(data: bytes) -> dict[str, Any]:
    source = {"type": "base64", "media_type": "image/png", "data": b64(data)}
    return {"role": "user", "content": [{"type": "image", "source": source}]}


def gemini_blob(data: bytes, mime: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"inline_data": {"mime_type": mime, "data": b64(data)}}]}


def cost(message: dict[str, Any], model: str) -> int:
    """What the media adds: the message minus the same message with no content."""
    empty = (
        {"role": "user", "content": ""} if "content" in message else {"role": "user", "parts": []}
    )
    return count_tokens([message], model=model) - count_tokens([empty], model=model)


# -- the providers' documented formulas, written out independently --------------------------
def openai_tiles(width: int, height: int, base: int = 85, tile: int = 170) -> int:
    if max(width, height) > 2048:
        ratio = 2048 / max(width, height)
        width, height = width * ratio, height * ratio
    if min(width, height) > 768:
        ratio = 768 / min(width, height)
        width, height = width * ratio, height * ratio
    return base + tile * math.ceil(width / 512) * math.ceil(height / 512)


def claude_formula(width: int, height: int) -> int:
    if max(width, height) > 1568:
        ratio = 1568 / max(width, height)
        width, height = round(width * ratio), round(height * ratio)
    return min(math.ceil(width * height / 750), 1600)


def gemini_formula(width: int, height: int) -> int:
    if width <= 384 and height <= 384:
        return 258
    return 258 * math.ceil(width / 768) * math.ceil(height / 768)


SIZES = [(1024, 1024), (300, 200), (1920, 1080), (4000, 500), (512, 512), (3000, 3000)]


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_real_png_per_provider(width: int, height: int) -> None:
    data = png(width, height)
    assert image_size(data) == (width, height)
    assert cost(openai_image(data), "gpt-4o") == openai_tiles(width, height)
    assert cost(openai_image(data, "low"), "gpt-4o") == 85
    assert cost(openai_image(data), "gpt-4o-mini") == openai_tiles(width, height, 2833, 5667)
    claude = cost(claude_image(data), "claude-sonnet-4-5")
    assert abs(claude - claude_formula(width, height)) <= 1  # rounding of the scaled size
    assert cost(gemini_blob(data, "image/png"), "gemini-2.5-pro") == gemini_formula(width, height)
    assert cost(gemini_blob(data, "image/png"), "gemini-3-pro") == 1120


def test_documented_examples() -> None:
    # OpenAI's worked examples: 1024x1024 high = 765; 2048x4096 -> 768x1536 = 6 tiles = 1105.
    assert cost(openai_image(png(1024, 1024)), "gpt-4o") == 765
    assert cost(openai_image(png(2048, 4096)), "gpt-4o") == 1105
    # Patch models: 1024x1024 = 1024 patches; 1800x2400 -> 1452 patches; times 1.62 (4.1-mini).
    assert cost(openai_image(png(1024, 1024)), "gpt-4.1-mini") == math.ceil(1024 * 1.62)
    assert cost(openai_image(png(1800, 2400)), "gpt-4.1-mini") == math.ceil(1452 * 1.62)
    # Anthropic's table of maximum sizes: 1092x1092 (1:1) ~ 1,590 tokens.
    assert cost(claude_image(png(1092, 1092)), "claude-sonnet-4-5") == 1590


@pytest.mark.parametrize("fmt", ["JPEG", "GIF", "WEBP"])
def test_other_formats_read_from_their_headers(fmt: str) -> None:
    data = pil_image(1280, 720, fmt)
    assert image_size(data) == (1280, 720)
    part = {"type": "image", "source": {"type": "base64", "media_type": "x", "data": b64(data)}}
    assert cost({"role": "user", "content": [part]}, "claude-opus-4-5") == math.ceil(
        1280 * 720 / 750
    )


def test_jpeg_frame_header_after_large_metadata() -> None:
    # A 200 KB ICC profile puts the frame header well past the first decoded block.
    data = pil_image(640, 480, "JPEG", icc_profile=bytes(200_000))
    assert data.index(b"\xff\xc0") > 150_000
    assert normalize(claude_image(data)).images[0][1:] == (640, 480)


def test_url_images_cost_the_documented_default() -> None:
    url = {
        "role": "user",
        "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}],
    }
    assert cost(url, "gpt-4o") == 765  # a 1024x1024 image at high detail
    assert cost(url, "claude-sonnet-4-5") == 1600  # the most an image can cost on Claude
    given = {"type": "image_url", "image_url": {"url": "https://x", "width": 512, "height": 512}}
    assert cost({"role": "user", "content": [given]}, "gpt-4o") == 85 + 170


def test_400_kb_pdf_is_counted_by_pages() -> None:
    data = pdf(3, padding=300_000)
    encoded = b64(data)
    assert len(encoded) > 400_000
    assert pdf_pages(data) == 3
    source = {"type": "base64", "media_type": "application/pdf", "data": encoded}
    claude = {"role": "user", "content": [{"type": "document", "source": source}]}
    # Anthropic: 1,500-3,000 text tokens a page plus the page as an image (<= 1,600).
    assert cost(claude, "claude-sonnet-4-5") == 3 * (3000 + 1600)
    assert cost(gemini_blob(data, "application/pdf"), "gemini-2.5-flash") == 3 * 258
    openai = {
        "type": "file",
        "file": {"filename": "a.pdf", "file_data": f"data:application/pdf;base64,{encoded}"},
    }
    assert cost({"role": "user", "content": [openai]}, "gpt-4o") < 10_000
    assert get_counter("estimate").count_text(encoded) > 130_000  # what it used to cost


def test_pages_hidden_in_an_object_stream() -> None:
    assert pdf_pages(pdf(7, compressed=True)) == 7
    assert pdf_pages(b"not a pdf") is None


def test_audio_by_duration() -> None:
    data = wav(10.0)
    assert wav_seconds(data) == pytest.approx(10.0)
    assert cost(gemini_blob(data, "audio/wav"), "gemini-2.5-pro") == 10 * 32
    part = {"type": "input_audio", "input_audio": {"data": b64(data), "format": "wav"}}
    assert cost({"role": "user", "content": [part]}, "gpt-4o") == 10 * 20


def audio_reply(**audio: Any) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": None, "audio": audio}]


def added(messages: list[dict[str, Any]], **spec: Any) -> int:
    empty = [{"role": "assistant", "content": ""}]
    return count_tokens(messages, **spec) - count_tokens(empty, **spec)


#: Per second of audio: OpenAI's Realtime rates (user 1 token / 100 ms, assistant 1 / 50 ms:
#: the higher, 20); Gemini 32, the highest documented, also the no-model estimate's.
AUDIO_RATES = [({"model": "gpt-4o"}, 20), ({"model": "gemini-2.5-pro"}, 32), ({}, 32)]


@pytest.mark.parametrize(("spec", "rate"), AUDIO_RATES)
def test_audio_reply_is_charged_by_its_transcript_not_a_flat_id(
    spec: dict[str, Any], rate: int
) -> None:
    """An audio reply sent back is audio: as long as saying its transcript takes (12 UTF-8 bytes
    of transcript a second, slower than speech), at the provider's rate per second."""
    short, long = "Sure.", "Here is the full weather report for the week ahead. " * 8
    for transcript in (short, long, "明天北京晴\uff0c最高气温二十五度。"):
        seconds = len(transcript.encode()) / 12
        got = added(audio_reply(id="audio_1", transcript=transcript), **spec)
        assert got == math.ceil(seconds * rate)
    assert added(audio_reply(id="a", transcript=long), **spec) > 10 * added(
        audio_reply(id="a", transcript=short), **spec
    )


@pytest.mark.parametrize(("spec", "rate"), AUDIO_RATES)
def test_audio_of_unknown_length_costs_the_documented_default(
    spec: dict[str, Any], rate: int
) -> None:
    """No data, no transcript: 60 s (documented in counting/media.py), not the id's JSON."""
    assert added(audio_reply(id="audio_abc123"), **spec) == 60 * rate
    data = wav(3.0)
    with_data = audio_reply(id="audio_1", data=b64(data), transcript="x" * 500)
    assert added(with_data, **spec) == 3 * rate  # a readable duration wins


def test_realtime_audio_items_with_transcripts() -> None:
    part = {"type": "input_audio", "transcript": "What's the weather like in Paris today?"}
    seconds = len(part["transcript"].encode()) / 12
    message = {"role": "user", "content": [part]}
    assert cost(message, "gemini-2.5-pro") == math.ceil(seconds * 32)


def test_chars_counter_keeps_the_reference_arithmetic_for_audio_replies() -> None:
    from context_manager.messages import to_json_text

    reply = audio_reply(id="audio_abc123", transcript="Hello there " * 20)
    chars = len(to_json_text({"id": "audio_abc123"}))
    assert count_tokens(reply, counter="chars") == math.ceil(chars / 4) + 3 + 3


def test_chars_counter_keeps_the_reference_arithmetic() -> None:
    # Pi / TS parity: chars/4 still charges a document's JSON, exactly as before.
    source = {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}
    part = {"type": "document", "source": source}
    message = {"role": "user", "content": [{"type": "text", "text": "hi"}, part, {"type": "x"}]}
    from context_manager.messages import to_json_text

    other = to_json_text(part) + "\n" + to_json_text({"type": "x"})
    chars = count_tokens([message], counter="chars")
    assert chars == math.ceil((2 + len(other)) / 4) + 3 + 3


def test_hostile_media_is_refused_or_counted() -> None:
    for data in ("!!!!", "", "A" * 10_001, b64(b"\x89PNG\r\n\x1a\n"), b64(b"\xff\xd8\xff")):
        part = {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": data},
        }
        assert cost({"role": "user", "content": [part]}, "claude-sonnet-4-5") == 1600
    broken = {"type": "document", "source": {"type": "base64", "data": b64(b"%PDF-1.4 junk")}}
    assert cost({"role": "user", "content": [broken]}, "gemini-2.5-pro") == 258
