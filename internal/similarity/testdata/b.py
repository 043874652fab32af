def moving_average(xs, k):
    """Sliding mean (my own work!)"""
    out = []
    acc = 0
    for i, v in enumerate(xs):
        acc += v
        if i >= k:
            acc -= xs[i - k]
        if i >= k - 1:
            out.append(acc / k)
    return out

def normalize(data):
    biggest = max(abs(d) for d in data) or 1
    return [d / biggest for d in data]

def describe(s):
    a, b = min(s), max(s)
    width = b - a
    return {'low': a, 'high': b, 'spread': width, 'n': len(s)}
