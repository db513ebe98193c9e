#!/bin/bash
# Health of the API container: restart it when /api/health does not say ok.
HEALTH_URL="http://127.0.0.1:9000/api/health"
CONTAINER=api

if ! curl -s --max-time 5 "$HEALTH_URL" | grep -q '"status":"ok"'; then
    echo "$(date -Is) unhealthy, restarting $CONTAINER"
    docker restart "$CONTAINER"
fi
