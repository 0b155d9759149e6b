import argparse


def main():
    import numpy as np

    parser = argparse.ArgumentParser()
    parser.parse_args()
    return np.exp(1.0)


if __name__ == "__main__":
    import numpy as np

    print(np.exp(np.arange(3)))
    main()
