# Helpers the scripts share; they source it (`. scripts/lib.sh`), it runs nothing by itself.

# COUNT distinct free TCP ports on 127.0.0.1 (default 1), one a line, for servers the caller starts next. They are
# drawn from below the kernel's ephemeral range (ip_local_port_range): a port from inside it may be taken by any
# outgoing connection (a pool's connection to PostgreSQL, a call between services) before the server binds it.
free_ports() {
    python3 - "${1:-1}" <<'PY'
import random, socket, sys
with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
    ephemeral_low = int(f.read().split()[0])
low, high = 10000, max(ephemeral_low, 10001) - 1
chosen = set()
while len(chosen) < int(sys.argv[1]):
    port = random.randint(low, high)
    if port in chosen:
        continue
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
    chosen.add(port)
print("\n".join(map(str, chosen)))
PY
}

# One free TCP port on 127.0.0.1 (see free_ports).
free_port() { free_ports 1; }

# The clock ticks of user + system time process PID has used so far (getconf CLK_TCK ticks a second).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
