t	what
1795921124.126312	fio of burst-write-128k rep 1 exiting
1795921124.477977	starting the health snapshot after the burst (it runs beside the idle)
1795921125.272289	checking that writing to /dev/nvme0n1 is still safe
1795921126.498715	the idle left of the planned 2 s
