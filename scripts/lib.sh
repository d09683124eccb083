# Helpers the scripts share; they source it (`. scripts/lib.sh`), it runs nothing by itself.

# A free TCP port on 127.0.0.1 (the kernel's choice, released again for the caller to bind).
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# The clock ticks of user + system time process PID has used so far (getconf CLK_TCK ticks a second).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
