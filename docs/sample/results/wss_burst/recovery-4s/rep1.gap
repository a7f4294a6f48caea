t	what
1795921138.786779	fio of recovery-2s rep 1 exiting
1795921139.838822	checking that writing to /dev/nvme0n1 is still safe
1795921143.214313	the idle left of the planned 4 s
