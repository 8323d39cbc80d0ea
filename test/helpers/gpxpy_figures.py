"""Reference figures of a GPX file by gpxpy (Debian's python3-gpxpy), for the tracking corpus test.

usage: /usr/bin/python3 gpxpy_figures.py FILE.gpx STOPPED_SPEED_KMH
Prints one JSON object: length_2d (m), span (s, first to last time), moving_time and stopped_time
(s, gpxpy's get_moving_data at the given stopped speed, as FitTrackee calls it; moving_time_2d the
same with the elevations removed, so gpxpy measures on the ground as the service does), uphill and downhill
(m, get_uphill_downhill), and best_1000 / best_5000 (s): the shortest time over that distance,
measured with gpxpy's distance_2d between the points of each segment (a jump between segments adds
no distance, the clock runs), time interpolated linearly inside a step. Times are whole seconds in
the files we compare, so float seconds are exact enough. Points without a time are left out first,
as the importer leaves them out.
"""

import json
import sys

import gpxpy

path, stopped = sys.argv[1], float(sys.argv[2])
with open(path, encoding="utf-8-sig") as f:
    gpx = gpxpy.parse(f)
# The importer keeps timed points only (an untimed track is a plan, not a recording): so does the reference.
for track in gpx.tracks:
    for segment in track.segments:
        segment.points = [p for p in segment.points if p.time is not None]

times, dist = [], []
total = 0.0
for track in gpx.tracks:
    for segment in track.segments:
        previous = None
        for point in segment.points:
            if point.time is None:
                continue
            if previous is not None:
                total += point.distance_2d(previous) or 0.0
            t = point.time.timestamp()
            if times and t <= times[-1]:
                # Same second as the point before: keep the first, as the importer does.
                previous = point
                continue
            times.append(t)
            dist.append(total)
            previous = point


def best(length):
    """Shortest time over `length` metres; the window starts on a point (enough at 1 Hz)."""
    result = None
    j = 0
    for i in range(len(times)):
        target = dist[i] + length
        if j < i:
            j = i
        while j < len(times) and dist[j] < target:
            j += 1
        if j >= len(times):
            break
        d0, t0 = dist[j - 1], times[j - 1]
        end = t0 + (times[j] - t0) * (target - d0) / (dist[j] - d0) if dist[j] > d0 else times[j]
        seconds = end - times[i]
        if result is None or seconds < result:
            result = seconds
    return result


moving = gpx.get_moving_data(stopped_speed_threshold=stopped)
updown = gpx.get_uphill_downhill()
# On the ground, as the service measures: gpxpy measures in 3D when points have elevations.
flat = gpx.clone()
for track in flat.tracks:
    for segment in track.segments:
        for point in segment.points:
            point.elevation = None
moving_2d = flat.get_moving_data(stopped_speed_threshold=stopped)
bounds = gpx.get_time_bounds()
print(
    json.dumps(
        {
            "length_2d": gpx.length_2d(),
            "span": (bounds.end_time - bounds.start_time).total_seconds() if bounds.start_time else None,
            "moving_time": moving.moving_time,
            "stopped_time": moving.stopped_time,
            "moving_time_2d": moving_2d.moving_time,
            "uphill": updown.uphill,
            "downhill": updown.downhill,
            "best_1000": best(1000),
            "best_5000": best(5000),
        }
    )
)
