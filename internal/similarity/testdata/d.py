def moving_average(values, window):
    averages = []
    for end in range(window, len(values) + 1):
        chunk = values[end - window:end]
        averages.append(sum(chunk) / len(chunk))
    return averages


def normalize(rows):
    largest = 0
    for r in rows:
        if abs(r) > largest:
            largest = abs(r)
    if largest == 0:
        return list(rows)
    return [r / largest for r in rows]


def describe(series):
    ordered = sorted(series)
    result = {"low": ordered[0], "high": ordered[-1]}
    result["spread"] = result["high"] - result["low"]
    result["n"] = len(ordered)
    return result
