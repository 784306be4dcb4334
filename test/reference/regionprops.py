#!/usr/bin/python3
"""Reference measurements by scikit-image's regionprops, for test/reference/regionprops.json.

Reads {"width", "height", "labels": [row-major label values]} as JSON on stdin and writes one
record per label to stdout: shape measurements, and per-channel intensity statistics over two
intensity images that it also writes (with tifffile) into test/reference/tiff/, where the tests
decode them with the project's own decoder:
  fixture-2ch.ome.tif  uint16, two named channels (OME-XML), one page each
  fixture-rgb.tif      uint8 RGB, samples interleaved
It also grows the labels by expand_labels (distances 3 and 5.5 pixels), the reference of the cell
expansion. Run through regenerate.ts (`node test/reference/regenerate.ts`), never by the tests: they read the
committed files. Needs numpy, scikit-image and tifffile (Debian: python3-skimage, python3-tifffile).
scikit-image 0.19 has intensity_mean/min/max; the median, standard deviation (ddof 0, as its later
intensity_std) and sum are numpy's over the same pixels, through extra_properties.
"""
import json
import pathlib
import sys

import numpy as np
import skimage
import tifffile
from skimage.measure import regionprops
from skimage.segmentation import expand_labels

data = json.load(sys.stdin)
height, width = data["height"], data["width"]
labels = np.asarray(data["labels"], dtype=np.int32).reshape(height, width)

# Intensity images with structure (a gradient, a brighter inside for each cell, noise) and ties.
rng = np.random.RandomState(23)
yy, xx = np.mgrid[0:height, 0:width]
two = np.stack(
    [
        1000 + 40 * xx + 25 * yy + 3000 * (labels % 5) * (labels > 0) + rng.randint(0, 500, size=(height, width)),
        60000 - 300 * yy + 7 * (labels * 97 % 1000) + rng.randint(0, 50, size=(height, width)) * 11,
    ]
).astype(np.uint16)
rgb = np.stack(
    [
        (xx * 2 + rng.randint(0, 16, size=(height, width))) % 256,
        (yy * 3 + 40 * (labels > 0)) % 256,
        rng.randint(0, 4, size=(height, width)) * 60,
    ],
    axis=-1,
).astype(np.uint8)

out = pathlib.Path(__file__).parent / "tiff"
tifffile.imwrite(out / "fixture-2ch.ome.tif", two, ome=True, metadata={"axes": "CYX", "Channel": {"Name": ["DAPI", "Cy5"]}})
tifffile.imwrite(out / "fixture-rgb.tif", rgb, photometric="rgb")


def median(mask, intensity):
    return np.median(intensity[mask], axis=0)


def std(mask, intensity):
    return np.std(intensity[mask], axis=0)


def total(mask, intensity):
    return np.sum(intensity[mask], axis=0)


def intensities(image):
    """Per label, per channel: [mean, median, std, min, max, sum]."""
    result = {}
    for r in regionprops(labels, intensity_image=image, extra_properties=(median, std, total)):
        stats = [r.intensity_mean, r.median, r.std, r.intensity_min, r.intensity_max, r.total]
        result[str(r.label)] = [[float(np.atleast_1d(s)[c]) for s in stats] for c in range(image.shape[-1])]
    return result


regions = []
for r in regionprops(labels):
    mu = r.moments_central
    regions.append(
        {
            "label": int(r.label),
            "area": int(r.area),
            # regionprops' centroid is (row, col) of pixel indices; ours is of pixel centres.
            "centroid_x": float(r.centroid[1]) + 0.5,
            "centroid_y": float(r.centroid[0]) + 0.5,
            "mu20": float(mu[0, 2]),  # sum of (x - x̄)²: axis 1 is x
            "mu11": float(mu[1, 1]),
            "mu02": float(mu[2, 0]),
            "eccentricity": float(r.eccentricity),
            "axis_major_length": float(r.axis_major_length),
            "axis_minor_length": float(r.axis_minor_length),
            "orientation": float(r.orientation),
            "equivalent_diameter_area": float(r.equivalent_diameter_area),
            "solidity": float(r.solidity),
            "feret_diameter_max": float(r.feret_diameter_max),
        }
    )

# As one comma-separated string each, row-major, so the JSON stays small and readable.
expanded = {str(d): ",".join(map(str, expand_labels(labels, distance=d).ravel().tolist())) for d in (3, 5.5)}

json.dump(
    {
        "scikit_image": skimage.__version__,
        "numpy": np.__version__,
        "regions": regions,
        # The channels last, as regionprops wants them: (rows, cols, channels).
        # Row-major labels after expand_labels(labels, distance), comma-separated.
        "expanded": expanded,
        "intensity": {
            "fixture-2ch.ome.tif": intensities(np.moveaxis(two, 0, -1)),
            "fixture-rgb.tif": intensities(rgb),
        },
    },
    sys.stdout,
    indent=1,
)
sys.stdout.write("\n")
