#!/data/data/com.termux/files/usr/bin/sh
# ~/.termux/boot/start.sh — the phone's boot script, kept after the migration: Termux:Boot runs it
# once the phone has booted. It takes the wake lock, starts the panes on the private tmux server
# (`-L phone`), and starts crond, which runs the crontab (tend's lines, after the migration).
# test/migrating.test.ts runs this very file at each emulated boot (every setting from the environment).
SOCKET=${SOCKET:-phone}
BLOG_CMD=${BLOG_CMD:-cd ~/blog && ./serve --port 4000}
ENGINE_CMD=${ENGINE_CMD:-cd ~/engine && ./engine --port 8080}
NGROK_CMD=${NGROK_CMD:-ngrok http 8080}
TUNNEL_CMD=${TUNNEL_CMD:-cloudflared tunnel run blog}
command -v termux-wake-lock > /dev/null && termux-wake-lock
t() { tmux -L "$SOCKET" "$@"; }
t new-session -d -s main -n blog "$BLOG_CMD"
t set-option -g remain-on-exit on                          # a pane whose process died stays, to be respawned
t new-window -d -t main: -n engine "$ENGINE_CMD"
t new-window -d -t main: -n ngrok "$NGROK_CMD"
t new-window -d -t main: -n blogtunnel "$TUNNEL_CMD"
command -v sv-enable > /dev/null && sv-enable crond
exit 0
