# tests/netns-lib.sh - hosts on real network namespaces, each with its own
# address, host name and sshd, for the multi-host tests (source it; root).
#
#   netns_up DIR NAME...   make one host per NAME: a network namespace
#                          pn<id>-NAME on a bridge pbr<id> (id: one no
#                          other run holds), address
#                          10.<x>.<y>.N/24 (N = 1, 2, ...), loopback up;
#                          a generated host key and a user key in DIR, an
#                          sshd per host (its own UTS namespace: host name
#                          NAME) that accepts that key for root; DIR/ssh_config
#                          names the key and ignores host keys.  Sets
#                          NETNS_ADDR[NAME], NETNS_NS[NAME], NETNS_SSH
#                          (the command for PROPEL_SSH).  Returns 1 (with a
#                          line on stderr) if anything is missing.
#   netns_nossh NAME       the host runs no sshd (stop it)
#   netns_run NAME CMD...  run CMD on host NAME (its namespace and name)
#   netns_bg NAME CMD...   the same in the background; NETNS_PID is CMD's
#                          own pid (the namespace tools exec, no shell stays)
#   netns_down             remove every host, bridge and sshd made here
#   detached PID...        the agent is off in each (`propel detach` says
#                          so) and no thread of it is ptraced; else one
#                          line why on stdout and status 1
#
# Nothing outside DIR is written but the namespaces and links themselves,
# which netns_down removes; root's ~/.ssh is never touched.
declare -gA NETNS_ADDR NETNS_NS NETNS_SSHD
NETNS_LIST=()
NETNS_BR=
NETNS_SSH=

netns_up() {
	local dir=$1 name i=0 id ns br a b
	shift
	command -v ip >/dev/null && command -v unshare >/dev/null ||
		{ echo "netns: ip or unshare missing" >&2; return 1; }
	[ -x /usr/sbin/sshd ] && command -v ssh >/dev/null ||
		{ echo "netns: openssh-server/openssh-client missing" >&2; return 1; }
	# the id names this run's bridge, namespaces and links: the first
	# from $$ on whose bridge this run makes (the kernel refuses a name
	# taken: another suite's, beside this one under tests/run.sh -j)
	for b in $(seq 0 199); do
		id=$(( ($$ + b) % 200 + 20 ))
		br=pbr$id
		ip netns list 2>/dev/null | grepq "^pn$id-" && continue
		ip link add $br type bridge forward_delay 0 stp_state 0 2>/dev/null && break
		br=
	done
	[ -n "$br" ] || { echo "netns: cannot make a bridge" >&2; return 1; }
	a=$(( $$ % 250 + 1 ))
	ip link set $br up
	NETNS_BR=$br
	mkdir -p "$dir" /run/sshd
	chmod 700 "$dir"
	ssh-keygen -q -t ed25519 -N '' -f "$dir/hostkey" >/dev/null </dev/null || return 1
	ssh-keygen -q -t ed25519 -N '' -f "$dir/id" >/dev/null </dev/null || return 1
	cp "$dir/id.pub" "$dir/authorized_keys"
	cat >"$dir/ssh_config" <<EOT
Host *
	User root
	IdentityFile $dir/id
	IdentitiesOnly yes
	UserKnownHostsFile /dev/null
	StrictHostKeyChecking no
	LogLevel ERROR
	ConnectTimeout 5
	CheckHostIP no
	GSSAPIAuthentication no
	AddressFamily inet
	KexAlgorithms curve25519-sha256
EOT
	NETNS_SSH="ssh -F $dir/ssh_config"
	for name in "$@"; do
		i=$((i + 1))
		ns=pn$id-$name
		ip netns add $ns || return 1
		ip link add v$id$name type veth peer name e$id$name || return 1
		ip link set e$id$name netns $ns
		ip link set v$id$name master $br up
		ip netns exec $ns ip link set lo up
		ip netns exec $ns ip link set e$id$name name eth0
		ip netns exec $ns ip addr add 10.$a.$id.$i/24 dev eth0
		ip netns exec $ns ip link set eth0 up
		NETNS_ADDR[$name]=10.$a.$id.$i
		NETNS_NS[$name]=$ns
		NETNS_LIST+=("$name")
		cat >"$dir/sshd-$name.conf" <<EOT
ListenAddress 10.$a.$id.$i
HostKey $dir/hostkey
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $dir/sshd-$name.pid
AcceptEnv PROPEL_*
UseDNS no
GSSAPIAuthentication no
EOT
		ip netns exec $ns unshare --uts sh -c "hostname $name; exec /usr/sbin/sshd -f '$dir/sshd-$name.conf' -E '$dir/sshd-$name.log'"
		NETNS_SSHD[$name]=$dir/sshd-$name.pid
	done
	# every sshd answers (asked from the first host: the bridge itself
	# has no address)
	for name in "$@"; do
		for b in $(seq 1 50); do
			ip netns exec "${NETNS_NS[$1]}" $NETNS_SSH ${NETNS_ADDR[$name]} true 2>/dev/null && break
			sleep 0.1
		done
		ip netns exec "${NETNS_NS[$1]}" $NETNS_SSH ${NETNS_ADDR[$name]} true ||
			{ echo "netns: sshd on $name does not answer" >&2; return 1; }
	done
}

netns_nossh() {
	local f=${NETNS_SSHD[$1]}
	[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
	NETNS_SSHD[$1]=
}

netns_run() {
	local name=$1
	shift
	ip netns exec "${NETNS_NS[$name]}" unshare --uts sh -c 'hostname "$0"; exec "$@"' "$name" "$@"
}

netns_bg() {
	local name=$1
	shift
	( exec ip netns exec "${NETNS_NS[$name]}" unshare --uts sh -c 'hostname "$0"; exec "$@"' "$name" "$@" ) &
	NETNS_PID=$!
}

netns_down() {
	local name f
	for name in "${NETNS_LIST[@]}"; do
		f=${NETNS_SSHD[$name]}
		[ -n "$f" ] && [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
		ip netns pids "${NETNS_NS[$name]}" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "${NETNS_NS[$name]}" 2>/dev/null
	done
	[ -n "$NETNS_BR" ] && ip link del "$NETNS_BR" 2>/dev/null
	NETNS_LIST=()
}

detached() {
	local p s
	for p in "$@"; do
		"$PROPEL" detach $p 2>&1 | grepq -E 'already off|had switched itself off' || { echo "agent still on in $p"; return 1; }
		for s in /proc/"$p"/task/*/status; do
			[ "$(awk '/^TracerPid:/ {print $2}' "$s")" = 0 ] || { echo "$p still ptraced"; return 1; }
		done
	done
}
