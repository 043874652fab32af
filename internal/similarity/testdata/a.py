def moving_average(values, window):
    # running sum over the window
    result = []
    total = 0.0
    for index, value in enumerate(values):
        total += value
        if index >= window:
            total -= values[index - window]
        if index >= window - 1:
            result.append(total / window)
    return result


def normalize(rows):
    peak = max(abs(r) for r in rows) or 1
    return [r / peak for r in rows]


def describe(series):
    lo, hi = min(series), max(series)
    spread = hi - lo
    return {"low": lo, "high": hi, "spread": spread, "n": len(series)}
