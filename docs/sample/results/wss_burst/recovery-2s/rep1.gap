t	what
1795809139.726974	fio of burst-write-128k rep 1 exiting
1795809139.881451	starting the health snapshot after the burst (it runs beside the idle)
1795809140.299039	checking that writing to /dev/nvme0n1 is still safe
1795809141.888831	the idle left of the planned 2 s
