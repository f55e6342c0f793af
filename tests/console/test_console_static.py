"""The console's browser app is served by the server itself: from package data, versioned by
content, never from the upstream proxy."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from console.static_routes import ASSETS_PATH, StaticAssets
from tests.conftest import StartServer


async def get(server_address: str, path: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=f"http://{server_address}") as client:
        return await client.get(path)


@pytest.fixture
async def address(make_server: StartServer) -> str:
    server = await make_server()
    return str(server.address)


async def test_console_redirects_to_the_app_and_the_app_is_served_locally(address: str) -> None:
    redirect = await get(address, "/console")
    assert redirect.status_code == 308 and redirect.headers["location"] == "/console/"
    page = await get(address, "/console/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.headers["cache-control"] == "no-cache"
    assert "%ASSETS%" not in page.text
    version = StaticAssets.packaged().version
    assert f'src="{ASSETS_PATH}/{version}/app.js"' in page.text


async def test_every_asset_the_page_names_is_served_and_cached_for_good(address: str) -> None:
    page = await get(address, "/console/")
    urls = set(re.findall(r'"(/console/assets/[^"]+)"', page.text))
    assert len(urls) >= 6  # app, style, and the vendored modules of the import map
    for url in urls:
        asset = await get(address, url)
        assert asset.status_code == 200, url
        assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
        if url.endswith(".js"):
            assert asset.headers["content-type"].startswith("text/javascript"), url


async def test_relative_module_imports_resolve_under_the_same_version(address: str) -> None:
    version = StaticAssets.packaged().version
    app = await get(address, f"{ASSETS_PATH}/{version}/app.js")
    for relative in re.findall(r'from "\./([^"]+)"', app.text):
        module = await get(address, f"{ASSETS_PATH}/{version}/{relative}")
        assert module.status_code == 200, relative


async def test_an_old_version_is_served_but_not_cached_and_unknown_paths_are_404_json(
    address: str,
) -> None:
    stale = await get(address, f"{ASSETS_PATH}/0000000000000000/app.js")
    assert stale.status_code == 200 and stale.headers["cache-control"] == "no-cache"
    for path in (
        f"{ASSETS_PATH}/0000000000000000/no-such.js",
        f"{ASSETS_PATH}/0000000000000000/index.html",
        "/console/elsewhere",
        "/console/api/no-such-route",
    ):
        answer = await get(address, path)
        assert answer.status_code == 404, path
        assert answer.json()["code"] == "not_found", path


async def test_no_method_on_any_console_path_goes_upstream(address: str) -> None:
    """The upstream fake answers 299 to whatever it gets: every answer here is ours."""
    async with httpx.AsyncClient(base_url=f"http://{address}") as client:
        for method in ("POST", "PUT", "DELETE", "OPTIONS"):
            for path in ("/console", "/console/", "/console/assets/x/app.js"):
                answer = await client.request(method, path)
                assert answer.status_code in (404, 405), (method, path, answer.status_code)
                assert answer.json()["code"] in ("not_found", "unimplemented"), (method, path)
        head = await client.head("/console")
        assert head.status_code == 308


async def test_no_other_site_may_frame_the_console(address: str) -> None:
    version = StaticAssets.packaged().version
    for path in ("/console/", f"{ASSETS_PATH}/{version}/app.js"):
        answer = await get(address, path)
        assert answer.headers["x-frame-options"] == "DENY", path
        assert answer.headers["content-security-policy"] == "frame-ancestors 'none'", path
        assert answer.headers["x-content-type-options"] == "nosniff", path


def test_the_version_changes_with_any_file() -> None:
    files = {"index.html": b"<p>%ASSETS%</p>", "app.js": b"1"}
    first = StaticAssets(files)
    assert StaticAssets(dict(files)).version == first.version
    assert StaticAssets({**files, "app.js": b"2"}).version != first.version
    assert StaticAssets({**files, "extra.css": b""}).version != first.version
    assert first.index == f"<p>{ASSETS_PATH}/{first.version}</p>".encode()
    with pytest.raises(ValueError, match=r"index\.html"):
        StaticAssets({"app.js": b""})


def test_the_vendored_libraries_keep_their_licences() -> None:
    assets = StaticAssets.packaged()
    for name in ("preact", "htm", "uplot"):
        assert assets.get(f"vendor/LICENSE.{name}"), name


async def test_assets_go_out_gzipped_when_the_client_allows_it(address: str) -> None:
    version = StaticAssets.packaged().version
    assets = StaticAssets.packaged()
    async with httpx.AsyncClient(base_url=f"http://{address}") as client:
        for path in ("/console/", f"{ASSETS_PATH}/{version}/vendor/uPlot.iife.min.js"):
            packed = await client.get(path, headers={"Accept-Encoding": "gzip"})
            assert packed.headers["content-encoding"] == "gzip", path
            assert packed.headers["vary"] == "Accept-Encoding", path
            # Sent compressed: fewer bytes on the wire than the file holds.
            assert int(packed.headers["content-length"]) < len(packed.content), path
            plain = await client.get(path, headers={"Accept-Encoding": "identity"})
            assert "content-encoding" not in plain.headers, path
            assert plain.headers["vary"] == "Accept-Encoding", path
            assert plain.content == packed.content, path
        refused = await client.get(
            f"{ASSETS_PATH}/{version}/app.js", headers={"Accept-Encoding": "gzip;q=0, br"}
        )
        assert "content-encoding" not in refused.headers
        assert refused.content == assets.get("app.js")


def test_gzip_is_read_from_accept_encoding() -> None:
    from console.static_routes import accepts_gzip

    assert accepts_gzip("gzip, deflate, br, zstd")
    assert accepts_gzip("*")
    assert accepts_gzip("br;q=1.0, gzip;q=0.5")
    assert not accepts_gzip("")
    assert not accepts_gzip("identity")
    assert not accepts_gzip("gzip;q=0")
    assert not accepts_gzip("*, gzip;q=0")
    assert not accepts_gzip("gzip;q=nonsense")


async def test_the_favicon_is_ours_and_never_goes_upstream(address: str) -> None:
    """The upstream fake answers 299 to whatever it gets: a 200 SVG is ours."""
    async with httpx.AsyncClient(base_url=f"http://{address}") as client:
        icon = await client.get("/favicon.ico")
        assert icon.status_code == 200
        assert icon.headers["content-type"] == "image/svg+xml"
        assert icon.content == StaticAssets.packaged().get("favicon.svg")
        for method in ("POST", "DELETE"):
            answer = await client.request(method, "/favicon.ico")
            assert answer.status_code in (404, 405), method
    page = await get(address, "/console/")
    assert f'rel="icon" href="{ASSETS_PATH}/' in page.text


def test_vendor_holds_only_the_vendored_builds_and_the_uplot_shim_is_ours() -> None:
    root = Path(__file__).parents[2]
    static = root / "console" / "static"
    readme = (root / "README.md").read_text()
    # Every file in vendor/ is a licence or a build the README's table of vendored libraries
    # names; a module of ours lives beside the app's, never among them.
    vendored = [
        path.name for path in (static / "vendor").iterdir() if not path.name.startswith("LICENSE.")
    ]
    assert vendored and all(f"`{name}`" in readme for name in vendored), vendored
    assert '"uplot": "%ASSETS%/uplot.js"' in (static / "index.html").read_text()
    assert "globalThis.uPlot" in (StaticAssets.packaged().get("uplot.js") or b"").decode()
