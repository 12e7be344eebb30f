"""rclpy nodes: thin adapters over the pure-Python cores."""
