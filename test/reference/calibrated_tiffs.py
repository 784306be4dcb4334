#!/usr/bin/python3
"""Small TIFFs with pixel sizes as microscopy software writes them, made with tifffile (the writer
napari, scikit-image and many acquisition scripts use), for the tests of the pixel-size readers.
Run by hand (`/usr/bin/python3 test/reference/calibrated_tiffs.py`, Debian's python3-tifffile) and
commit the files; the tests never run Python. What each file should read as is in
test/engine/pixel-size.test.ts.
"""
import pathlib

import numpy as np
import tifffile

out = pathlib.Path(__file__).parent / "tiff"
out.mkdir(exist_ok=True)
rng = np.random.RandomState(5)
two = rng.randint(0, 4096, size=(2, 6, 8)).astype(np.uint16)
one = rng.randint(0, 255, size=(6, 8)).astype(np.uint8)

# OME-TIFF, 0.325 µm square pixels, two named channels (one page each).
tifffile.imwrite(
    out / "ome-325nm-2ch.ome.tif",
    two,
    ome=True,
    metadata={
        "axes": "CYX",
        "PhysicalSizeX": 0.325,
        "PhysicalSizeXUnit": "µm",
        "PhysicalSizeY": 0.325,
        "PhysicalSizeYUnit": "µm",
        "Channel": {"Name": ["DAPI", "Alexa 488 (GFP)"]},
    },
)
# OME-TIFF in nanometres, pixels taller than wide.
tifffile.imwrite(
    out / "ome-nm-oblong.ome.tif",
    one,
    ome=True,
    metadata={"axes": "YX", "PhysicalSizeX": 650.0, "PhysicalSizeXUnit": "nm", "PhysicalSizeY": 1300.0, "PhysicalSizeYUnit": "nm"},
)
# ImageJ hyperstack: the unit in the description, the size in the resolution tags, a z spacing.
tifffile.imwrite(
    out / "imagej-0.5um.tif",
    two[np.newaxis],
    imagej=True,
    resolution=(1 / 0.5, 1 / 0.5),
    metadata={"axes": "ZCYX", "unit": "um", "spacing": 2.0},
)
# ImageJ's own spelling of the unit ("micron").
tifffile.imwrite(out / "imagej-micron.tif", one, imagej=True, resolution=(1 / 0.25, 1 / 0.25), metadata={"unit": "micron"})
# Plain TIFFs: resolution per centimetre, per inch, 72 per inch (the default many writers put), none.
tifffile.imwrite(out / "plain-cm.tif", one, resolution=(1e4 / 0.8, 1e4 / 0.8), resolutionunit="CENTIMETER")
tifffile.imwrite(out / "plain-inch.tif", one, resolution=(25400 / 2.0, 25400 / 2.0), resolutionunit="INCH")
tifffile.imwrite(out / "plain-72dpi.tif", one, resolution=(72, 72), resolutionunit="INCH")
tifffile.imwrite(out / "plain-none.tif", one)
print("written to", out)
