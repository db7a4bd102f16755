#!/usr/bin/env bash
# System packages the test suite needs, installed only when missing (Debian/Ubuntu, as root):
#   - offscreen GL for MuJoCo videos: Mesa's EGL (software rendering works without a GPU), OSMesa as the fallback;
#   - Debian's chromium for the browser tests of the rating and leaderboard pages (Playwright's own browser download is not used).
# As a non-root user it installs nothing and says what is missing; the tests that need it then skip with a reason.
set -uo pipefail

missing=()
have_lib() { ldconfig -p 2>/dev/null | grep -q "$1"; }
have_lib 'libEGL\.so\.1 ' || missing+=(libegl1)
have_lib 'libEGL_mesa\.so\.0 ' || missing+=(libegl-mesa0)
ls /usr/lib/*/dri/swrast_dri.so /usr/lib/*/dri/kms_swrast_dri.so >/dev/null 2>&1 || missing+=(libgl1-mesa-dri)
have_lib 'libOSMesa\.so' || missing+=(libosmesa6)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" != "0" ]; then
    echo "bird: missing system packages: ${missing[*]}" >&2
    echo "bird: install them as root (apt-get install -y ${missing[*]}); tests that need them will skip" >&2
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "bird: missing system packages (${missing[*]}) and no apt-get; tests that need them will skip" >&2
    exit 0
fi
echo "bird: installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || echo "bird: apt-get install ${missing[*]} failed; tests that need them will skip" >&2
exit 0
