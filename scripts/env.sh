# Shared environment for the scripts: cargo on PATH.
export PATH="$HOME/.cargo/bin:$PATH"
# Mesa's Vulkan drivers complain when this is unset (harmless, but noisy in test logs).
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
  export XDG_RUNTIME_DIR="${TMPDIR:-/tmp}/xdg-runtime-$(id -u)"
  mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
fi
