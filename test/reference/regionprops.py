#!/usr/bin/python3
"""Reference measurements by scikit-image's regionprops, for test/reference/regionprops.json.

Reads {"width", "height", "labels": [row-major label values]} as JSON on stdin and writes one
record per label to stdout. Run through regenerate.ts (`node test/reference/regenerate.ts`), never
by the tests: they read the committed JSON. Needs numpy and scikit-image (Debian: python3-skimage).
"""
import json
import sys

import numpy as np
import skimage
from skimage.measure import regionprops

data = json.load(sys.stdin)
labels = np.asarray(data["labels"], dtype=np.int32).reshape(data["height"], data["width"])

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

json.dump({"scikit_image": skimage.__version__, "numpy": np.__version__, "regions": regions}, sys.stdout, indent=1)
sys.stdout.write("\n")
