"""A plausible wrong solution: schedules everything without reading the speakers' mail, so withdrawn
sessions stay on the programme and availability requests are ignored; clashes and rooms are handled."""
flip = {"read_mail": False}
