"""One static figure export, run by report.iplot.spec_image in a process group of its own
(so that a browser that hangs is killed with it): a JSON job on stdin (data, layout,
format, width, height, scale), the image bytes on stdout; on failure one line on stderr
and exit 1."""

from __future__ import annotations

import json
import sys


def main() -> int:
    try:
        job = json.loads(sys.stdin.buffer.read())
        import plotly.io as pio

        # the spec is the one plotly.js draws on the page, as it is (validate=False)
        img = pio.to_image({"data": job["data"], "layout": job["layout"]},
                           format=job["format"], width=job["width"], height=job["height"],
                           scale=job["scale"], validate=False)
    except Exception as e:  # kaleido reports a missing or failing browser its own way
        sys.stderr.write((" ".join(str(e).split()) or type(e).__name__) + "\n")
        return 1
    sys.stdout.buffer.write(img)
    return 0


if __name__ == "__main__":
    sys.exit(main())
