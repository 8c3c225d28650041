# Shared environment for the scripts: cargo on PATH.
export PATH="$HOME/.cargo/bin:$PATH"
