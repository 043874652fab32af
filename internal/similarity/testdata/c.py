import numpy as np


def moving_average(values, window):
    kernel = np.ones(window) / window
    return list(np.convolve(values, kernel, mode="valid"))


def normalize(rows):
    arr = np.asarray(rows, dtype=float)
    scale = np.abs(arr).max()
    return (arr / scale if scale else arr).tolist()


def describe(series):
    arr = np.asarray(series)
    return dict(low=arr.min(), high=arr.max(), spread=np.ptp(arr), n=arr.size)
