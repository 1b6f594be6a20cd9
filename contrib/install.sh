#!/bin/sh
# Install healerd as a system service: a virtual environment under /opt/healerd (Debian 12
# and other PEP 668 systems refuse `pip install` into the system Python, and the unit's
# ProtectHome=yes hides a venv in a home directory), the systemd unit, the `healerctl`
# group, and /etc/healerd/healerd.toml (kept if it exists).
#
#   sudo sh contrib/install.sh                # from a checkout
#   sudo sh contrib/install.sh --browser      # also for `fetch = "browser"` sources: Playwright
#                                             # (healerd[browser]) and the unit's drop-in
#                                             # healerd.service.d/browser.conf; Chromium itself
#                                             # comes from the distribution (apt-get install chromium)
#   sudo systemctl enable --now healerd
#
# PREFIX (default /opt/healerd) is where the venv goes; the installed unit's ExecStart
# points at $PREFIX/bin/healerd. With DESTDIR set, the unit, sysusers and config files go
# under DESTDIR and systemd is not touched (for packaging, and for the tests).
# Upgrade: run it again. Uninstall: systemctl disable --now healerd; rm -r the venv,
# /etc/systemd/system/healerd.service and /etc/sysusers.d/healerd.conf.
set -eu

BROWSER=""
for arg in "$@"; do
    case "$arg" in
        --browser) BROWSER=1 ;;
        *) echo "usage: $0 [--browser]" >&2; exit 2 ;;
    esac
done

PREFIX="${PREFIX:-/opt/healerd}"
DESTDIR="${DESTDIR:-}"
PYTHON="${PYTHON:-python3}"
SRC="$(cd "$(dirname "$0")/.." && pwd)"

"$PYTHON" -m venv "$PREFIX"
"$PREFIX/bin/python" -m pip install --quiet --upgrade pip
if [ -n "$BROWSER" ]; then
    "$PREFIX/bin/python" -m pip install --quiet "$SRC[browser]"
else
    "$PREFIX/bin/python" -m pip install --quiet "$SRC"
fi
"$PREFIX/bin/healerd" --version

install -d "$DESTDIR/etc/systemd/system" "$DESTDIR/etc/sysusers.d" "$DESTDIR/etc/healerd"
sed "s#^ExecStart=/opt/healerd/bin/healerd #ExecStart=$PREFIX/bin/healerd #" \
    "$SRC/contrib/systemd/healerd.service" > "$DESTDIR/etc/systemd/system/healerd.service"
chmod 644 "$DESTDIR/etc/systemd/system/healerd.service"
install -m 644 "$SRC/contrib/systemd/healerd.sysusers" "$DESTDIR/etc/sysusers.d/healerd.conf"
if [ -n "$BROWSER" ]; then
    install -d "$DESTDIR/etc/systemd/system/healerd.service.d"
    install -m 644 "$SRC/contrib/systemd/healerd.service.d/browser.conf" \
        "$DESTDIR/etc/systemd/system/healerd.service.d/browser.conf"
    if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
        echo "browser sources also need Chromium: apt-get install chromium (or set [browser] executable)"
    fi
fi
if [ ! -e "$DESTDIR/etc/healerd/healerd.toml" ]; then
    install -m 644 "$SRC/contrib/healerd.toml" "$DESTDIR/etc/healerd/healerd.toml"
fi

if [ -z "$DESTDIR" ]; then
    systemd-sysusers /etc/sysusers.d/healerd.conf
    systemctl daemon-reload
    echo "installed; start it with: systemctl enable --now healerd"
fi
