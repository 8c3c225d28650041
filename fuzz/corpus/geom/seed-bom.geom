; two panels
photon_energy = 9300 eV
res = 10000
clen = 0.1 m
adu_per_eV = 0.001
dim0 = %
dim1 = ss
dim2 = fs

p0/min_fs = 0
p0/max_fs = 19   ; inclusive
p0/min_ss = 0
p0/max_ss = 9
p0/fs = -1.0x
p0/ss = -1.0y
p0/corner_x = 20
p0/corner_y = 12
p0/coffset = 0.002
p0/mask_edge_pixels = 1

p1/min_fs = 0
p1/max_fs = 19
p1/min_ss = 10
p1/max_ss = 19
p1/fs = +0.0000x +1y
p1/ss = -x
p1/corner_x = -12.5
p1/corner_y = -20
p1/no_index = 0
p1/max_adu = 60000

bad_edge/min_fs = 0
bad_edge/max_fs = 4
bad_edge/min_ss = 18
bad_edge/max_ss = 40
bad_edge/panel = p1

bad_box/min_x = -3
bad_box/max_x = 3
bad_box/min_y = -2e0
bad_box/max_y = 2

group_all = p0,p1
