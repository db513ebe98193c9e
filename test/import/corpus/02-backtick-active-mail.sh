#!/bin/bash
# Checks that antd runs; restarts it and mails the status if not.
# add a crontab entry to call this script each 15min
# */15 * * * * /opt/www/serverconfig/status_notification.sh > /dev/null
SERVICE=antd
MAILBOX=ops@example.org

if [ "`systemctl is-active $SERVICE`" != "active" ]
then
	echo "$SERVICE wasnt running so attempting restart"
	systemctl restart $SERVICE
	echo "Mailing $MAILBOX with current status"
	systemctl status $SERVICE | mail -s "[$(hostname)] $SERVICE restarted" $MAILBOX
	exit 0
fi
echo "$SERVICE is currently running"
exit 0
