"""Front-end libraries of the dashboard, installed from npm (package.json at the repository root, `npm ci` in
scripts/install.sh) and served straight out of node_modules through STATICFILES_DIRS: nothing from node_modules is
committed, nothing is loaded from a CDN. `collectstatic` copies them into STATIC_ROOT like any other static file.

Each entry maps a static prefix to one package's `dist` folder; templates use `{% static 'vendor/htmx/htmx.min.js' %}`.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / "node_modules"
PACKAGES = {
    "vendor/htmx": "htmx.org/dist",
    "vendor/uplot": "uplot/dist",
}
FILES = ("vendor/htmx/htmx.min.js", "vendor/uplot/uPlot.iife.min.js", "vendor/uplot/uPlot.min.css")


def static_dirs() -> list[tuple[str, str]]:
    """STATICFILES_DIRS entries for the installed packages (missing ones are left out; a check reports them)."""
    return [(prefix, str(NODE_MODULES / path)) for prefix, path in PACKAGES.items() if (NODE_MODULES / path).is_dir()]


def missing_files(staticfiles_dirs) -> list[str]:
    """The files of FILES that the configured STATICFILES_DIRS do not hold."""
    dirs = dict(entry for entry in staticfiles_dirs or [] if isinstance(entry, tuple))
    missing = []
    for name in FILES:
        prefix, _, rest = name.rpartition("/")
        folder = dirs.get(prefix)
        if folder is None or not (Path(folder) / rest).is_file():
            missing.append(name)
    return missing
