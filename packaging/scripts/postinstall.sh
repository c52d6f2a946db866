#!/bin/sh
# Makes systemd see the unit. The service is not enabled or started: review
# /etc/drover/drover.yaml, then run "systemctl enable --now drover".
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
	# On upgrade, a running service restarts onto the new binary.
	systemctl try-restart drover >/dev/null 2>&1 || true
fi
exit 0
