from healerd.cli.healerd_cmd import main

main()
