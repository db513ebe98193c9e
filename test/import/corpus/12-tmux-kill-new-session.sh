#!/bin/bash
# ComfyUI watchdog (cron */10). The UI hangs after a few days: kill the session and start it again.
SESSION=comfy
if ! curl -sf -m 5 http://127.0.0.1:8188/ > /dev/null; then
  tmux kill-session -t "$SESSION" 2>/dev/null
  tmux new-session -d -s "$SESSION" "cd ~/ComfyUI && python main.py --listen 127.0.0.1"
  curl -s -d "ComfyUI restarted" https://ntfy.sh/my-gpu-box > /dev/null
fi
